//! skillmem's tasks: `cargo xtask dist` packs the release artefacts from release binaries,
//! with no tool beyond npm (for `npm pack`); `cargo xtask bench …` and `cargo xtask study …`
//! build and run the benchmarks and dataset studies (`xtask/measure`, which depends on the
//! skillmem library, so that this crate stays std only and a cold `cargo xtask dist` builds
//! nothing else).
//!
//! `dist`
//! Writes to `target/dist/` (or `--out DIR`):
//! - `npm/*.tgz`: `skillmem` (a launcher that runs the binary of its platform's package),
//!   `@skillmem/cli-<platform>` for each binary given (the biome/esbuild layout: the launcher's
//!   optionalDependencies list every platform, npm installs the one whose `os`/`cpu` match),
//!   `@skillmem/opencode` (editors/opencode) and `@skillmem/pi` (editors/pi);
//! - `skillmem_cli-<version>-py3-none-<platform>.whl` for each binary: the binary as the
//!   wheel's script (`pipx install skillmem-cli`, `uvx --from skillmem-cli skillmem`);
//! - `SHA256SUMS` of them all.
//!
//! Every version is the workspace's (`[workspace.package] version` of Cargo.toml), and so is the
//! repository every package names (`[workspace.package] repository`). The files that ship from
//! the repository itself (the Claude Code marketplace and plugin, the plugin's script) carry the
//! version too: `cargo xtask version --set X.Y.Z` writes it everywhere, a test checks it.

#![allow(clippy::print_stdout)]

mod zip;

use std::path::{Path, PathBuf};
use std::process::Command;

type Result<T> = std::result::Result<T, String>;

/// The platforms a release builds: npm's `process.platform-process.arch`, and the Rust target.
pub const PLATFORMS: [(&str, &str); 5] = [
    ("linux-x64", "x86_64-unknown-linux-gnu"),
    ("linux-arm64", "aarch64-unknown-linux-gnu"),
    ("darwin-x64", "x86_64-apple-darwin"),
    ("darwin-arm64", "aarch64-apple-darwin"),
    ("win32-x64", "x86_64-pc-windows-msvc"),
];

/// The Python distribution's name (`skillmem` on PyPI is another project's).
const WHEEL_NAME: &str = "skillmem-cli";

const USAGE: &str = "usage: cargo xtask dist [--bin PLATFORM=FILE]... [--out DIR] [--no-wheel] [--no-npm]

Packs the npm packages and the Python wheel from release binaries into target/dist/.
PLATFORM is one of linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64; without --bin,
the binary of this platform in target/release/ (build it first: cargo build --release).

cargo xtask version    prints the version every package gets (Cargo.toml's)
cargo xtask version --set X.Y.Z
                       writes it to Cargo.toml, Cargo.lock and the committed manifests
cargo xtask repository prints the repository every package names (Cargo.toml's)
cargo xtask bench [--features F] COMMAND [ARGS]
                       builds skillmem and the benchmarks in release and runs one:
                       recall, index, skills, ui, team (cargo xtask bench --help)
cargo xtask study historian-features --out OUT FILE...
                       the same, for a dataset study (cargo xtask study --help)";

/// The files in the repository that carry the version as they are (not staged by `dist`): a
/// JSON manifest's `"version"` lines, or the script's `VERSION=`.
const VERSIONED: [&str; 6] = [
    ".claude-plugin/marketplace.json",
    "editors/claude-code/.claude-plugin/plugin.json",
    "editors/claude-code/scripts/skillmem.sh",
    "packaging/npm/skillmem/package.json",
    "editors/opencode/package.json",
    "editors/pi/package.json",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("dist") => dist(&args[1..]),
        Some("version") if args.len() == 3 && args[1] == "--set" => set_version(&root(), &args[2]),
        Some("version") => version(&root()).map(|v| println!("{v}")),
        Some("repository") => repository(&root()).map(|r| println!("{r}")),
        Some("bench" | "study") => measure(&root(), &args),
        _ => Err(USAGE.to_string()),
    };
    if let Err(e) = r {
        eprintln!("xtask: {e}");
        std::process::exit(1);
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ is in the workspace root").to_path_buf()
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

/// `[workspace.package] version` of the root Cargo.toml.
fn version(root: &Path) -> Result<String> {
    workspace_key(root, "version")
}

/// `[workspace.package] repository` of the root Cargo.toml (`https://github.com/OWNER/NAME`).
fn repository(root: &Path) -> Result<String> {
    workspace_key(root, "repository")
}

/// The line of `key` in `[workspace.package]` of Cargo.toml: its index and its value.
fn workspace_line(text: &str, key: &str) -> Option<(usize, String)> {
    let mut in_section = false;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            in_section = line == "[workspace.package]";
        } else if in_section {
            let rest = line.strip_prefix(key).map(str::trim_start);
            if let Some(v) = rest.and_then(|l| l.strip_prefix('=')) {
                return Some((i, v.trim().trim_matches('"').to_string()));
            }
        }
    }
    None
}

fn workspace_key(root: &Path, key: &str) -> Result<String> {
    let text = read_text(&root.join("Cargo.toml"))?;
    workspace_line(&text, key).map(|(_, v)| v).ok_or_else(|| format!("no {key} in [workspace.package] of Cargo.toml"))
}

/// `cargo xtask version --set X.Y.Z`: Cargo.toml's version, the files of `VERSIONED`, then
/// Cargo.lock's entries of the workspace's crates (`cargo update --workspace`).
fn set_version(root: &Path, new: &str) -> Result<()> {
    if new.split('.').count() != 3 || !new.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())) {
        return Err(format!("--set {new}: expected X.Y.Z"));
    }
    let cargo_toml = root.join("Cargo.toml");
    let text = read_text(&cargo_toml)?;
    let (at, _) = workspace_line(&text, "version").ok_or("no version in [workspace.package] of Cargo.toml")?;
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i == at { format!("version = \"{new}\"") } else { l.to_string() })
        .collect();
    write(&cargo_toml, (lines.join("\n") + "\n").as_bytes())?;
    for f in VERSIONED {
        let p = root.join(f);
        let text = read_text(&p)?;
        let out = if f.ends_with(".sh") { set_script_version(&text, new) } else { set_versions(&text, new) };
        write(&p, out.as_bytes())?;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(cargo)
        .args(["update", "--workspace", "--offline"])
        .current_dir(root)
        .status()
        .map_err(|e| format!("cargo update --workspace: {e}"))?;
    if !ok.success() {
        return Err("cargo update --workspace --offline failed: run it yourself, so Cargo.lock agrees".into());
    }
    println!("version {new}: Cargo.toml, Cargo.lock, {}", VERSIONED.join(", "));
    Ok(())
}

/// `cargo xtask bench|study [--features F] ARGS…`: builds the `skillmem` binary and the
/// benchmarks (`xtask/measure`) in release with the cargo features `F` (e.g. `local-model`),
/// then runs the latter with `bench ARGS…` (or `study ARGS…`); a benchmark spawns the
/// `skillmem` built beside it. Exits with their exit code.
fn measure(root: &Path, args: &[String]) -> Result<()> {
    let (features, rest) = split_features(&args[1..]);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (package, bin) in [("skillmem", "skillmem"), ("xtask-measure", "xtask-measure")] {
        let mut build = Command::new(&cargo);
        build.args(["build", "--release", "--package", package, "--bin", bin]).current_dir(root);
        for k in run_env() {
            build.env_remove(k);
        }
        if let Some(f) = &features {
            build.args(["--features", f]);
        }
        let ok = build.status().map_err(|e| format!("cargo build --package {package}: {e}"))?;
        if !ok.success() {
            return Err(format!("cargo build --release --package {package} failed"));
        }
    }
    let exe = target_dir(root).join("release").join(format!("xtask-measure{}", std::env::consts::EXE_SUFFIX));
    let status = Command::new(&exe)
        .arg(&args[0])
        .args(rest)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

/// The variables `cargo run` sets for xtask itself (its package's name, version and
/// folder). A build script that reruns when one of them changes (ring's does) is fingerprinted
/// by the value in cargo's own environment, so a nested `cargo build` that kept them would
/// rebuild ring, rustls and skillmem, and so would the next plain `cargo build` after it.
fn run_env() -> Vec<std::ffi::OsString> {
    const SET_BY_RUN: [&str; 7] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| k.to_str().is_some_and(|k| k.starts_with("CARGO_PKG_") || SET_BY_RUN.contains(&k)))
        .collect()
}

/// A leading `--features F` (or `--features=F`) taken off the arguments.
fn split_features(args: &[String]) -> (Option<String>, &[String]) {
    match args {
        [flag, value, rest @ ..] if flag == "--features" => (Some(value.clone()), rest),
        [flag, rest @ ..] if flag.starts_with("--features=") => (Some(flag["--features=".len()..].to_string()), rest),
        _ => (None, args),
    }
}

/// The plugin script with its `VERSION=` line set.
fn set_script_version(text: &str, version: &str) -> String {
    text.lines()
        .map(|l| if l.starts_with("VERSION=") { format!("VERSION={version}") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The version a committed file carries: its `"version"` lines' or `VERSION=` values.
#[cfg(test)]
fn versions_in(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let t = l.trim_start();
            t.strip_prefix("VERSION=")
                .or_else(|| t.strip_prefix("\"version\": \""))
                .map(|v| v.trim_end().trim_end_matches(',').trim_end_matches('"').to_string())
        })
        .collect()
}

/// A package.json with `"repository"` (the workspace's, `directory` the package's folder in
/// it) as its first key, in place of any it had.
fn set_repository(manifest: &str, repo: &str, directory: Option<&str>) -> String {
    let dir = directory.map(|d| format!(", \"directory\": \"{d}\"")).unwrap_or_default();
    let mut out = String::new();
    for (i, line) in manifest.lines().enumerate() {
        if line.trim_start().starts_with("\"repository\":") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if i == 0 {
            out.push_str(&format!("  \"repository\": {{ \"type\": \"git\", \"url\": \"git+{repo}.git\"{dir} }},\n"));
        }
    }
    out
}

/// This machine's platform in npm's naming.
fn host_platform() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("linux-x64"),
        ("linux", "aarch64") => Some("linux-arm64"),
        ("macos", "x86_64") => Some("darwin-x64"),
        ("macos", "aarch64") => Some("darwin-arm64"),
        ("windows", "x86_64") => Some("win32-x64"),
        _ => None,
    }
}

fn dist(args: &[String]) -> Result<()> {
    let root = root();
    let version = version(&root)?;
    let repo = repository(&root)?;
    let mut bins: Vec<(String, PathBuf)> = vec![];
    let mut out = target_dir(&root).join("dist");
    let (mut npm, mut wheel) = (true, true);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bin" => {
                let v = it.next().ok_or("--bin needs PLATFORM=FILE")?;
                let (p, f) = v.split_once('=').ok_or_else(|| format!("--bin {v}: expected PLATFORM=FILE"))?;
                if !PLATFORMS.iter().any(|(n, _)| *n == p) {
                    return Err(format!("--bin {v}: unknown platform {p}\n\n{USAGE}"));
                }
                bins.push((p.to_string(), PathBuf::from(f)));
            }
            "--out" => out = PathBuf::from(it.next().ok_or("--out needs DIR")?),
            "--no-npm" => npm = false,
            "--no-wheel" => wheel = false,
            _ => return Err(format!("unknown argument {a}\n\n{USAGE}")),
        }
    }
    // npm pack runs in each staged folder: a relative --out (the release workflow's `--out
    // dist`) must name the same folder from there.
    let out = std::env::current_dir().map_err(|e| format!("the current folder: {e}"))?.join(out);
    if bins.is_empty() {
        let p = host_platform().ok_or("no release build for this platform: pass --bin PLATFORM=FILE")?;
        let exe = if p.starts_with("win32") { "skillmem.exe" } else { "skillmem" };
        bins.push((p.to_string(), target_dir(&root).join("release").join(exe)));
    }
    for (p, f) in &bins {
        if !f.is_file() {
            return Err(format!("{p}: no binary at {} (cargo build --release first)", f.display()));
        }
    }
    let stage = out.join("stage");
    let _ = std::fs::remove_dir_all(&stage);
    let mut made = vec![];
    if npm {
        let npm_out = out.join("npm");
        std::fs::create_dir_all(&npm_out).map_err(|e| format!("{}: {e}", npm_out.display()))?;
        let mut dirs = vec![stage_launcher(&root, &stage, &version)?];
        for (p, f) in &bins {
            dirs.push(stage_platform(&stage, p, f, &version)?);
        }
        dirs.push(stage_plugin(&root.join("editors/opencode"), &stage.join("opencode"), &version, true)?);
        dirs.push(stage_plugin(&root.join("editors/pi"), &stage.join("pi"), &version, false)?);
        for (d, folder) in dirs.iter().zip(package_folders(bins.len())) {
            let m = d.join("package.json");
            write(&m, set_repository(&read_text(&m)?, &repo, folder).as_bytes())?;
        }
        for d in dirs {
            made.push(npm_pack(&d, &npm_out)?);
        }
    }
    if wheel {
        for (p, f) in &bins {
            made.push(write_wheel(&out, p, f, &version, &repo)?);
        }
    }
    let _ = std::fs::remove_dir_all(&stage);
    let mut sums = String::new();
    for f in &made {
        let bytes = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let name = f.strip_prefix(&out).unwrap_or(f).display().to_string();
        sums.push_str(&format!("{}  {name}\n", zip::hex(&zip::sha256(&bytes))));
        println!("{}", f.display());
    }
    write(&out.join("SHA256SUMS"), sums.as_bytes())?;
    Ok(())
}

/// The folder in the repository of each staged package, in `dist`'s order: the launcher, the
/// platform packages (made by xtask, no folder), the OpenCode plugin, the Pi extension.
fn package_folders(platforms: usize) -> Vec<Option<&'static str>> {
    let mut v = vec![Some("packaging/npm/skillmem")];
    v.extend(std::iter::repeat_n(None, platforms));
    v.extend([Some("editors/opencode"), Some("editors/pi")]);
    v
}

/// `packaging/npm/skillmem` with every version set.
fn stage_launcher(root: &Path, stage: &Path, version: &str) -> Result<PathBuf> {
    let src = root.join("packaging/npm/skillmem");
    let dir = stage.join("skillmem");
    copy_tree(&src, &dir)?;
    let manifest = read_text(&src.join("package.json"))?;
    write(&dir.join("package.json"), set_versions(&manifest, version).as_bytes())?;
    Ok(dir)
}

/// `@skillmem/cli-<platform>`: the binary under `bin/`, installed only where `os`/`cpu` match.
fn stage_platform(stage: &Path, platform: &str, bin: &Path, version: &str) -> Result<PathBuf> {
    let (os, cpu) = platform.split_once('-').expect("platform names are os-cpu");
    let exe = if os == "win32" { "skillmem.exe" } else { "skillmem" };
    let dir = stage.join(format!("cli-{platform}"));
    let content = std::fs::read(bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    write(&dir.join("bin").join(exe), &content)?;
    set_executable(&dir.join("bin").join(exe))?;
    let libc = if os == "linux" { "\n  \"libc\": [\"glibc\"]," } else { "" };
    let manifest = format!(
        r#"{{
  "name": "@skillmem/cli-{platform}",
  "version": "{version}",
  "description": "The skillmem binary for {platform} (installed by the skillmem package)",
  "license": "MIT OR Apache-2.0",
  "os": ["{os}"],
  "cpu": ["{cpu}"],{libc}
  "files": ["bin"],
  "preferUnplugged": true
}}
"#
    );
    write(&dir.join("package.json"), manifest.as_bytes())?;
    write(
        &dir.join("README.md"),
        format!("The skillmem binary for {platform}: install `skillmem`, which picks this package.\n").as_bytes(),
    )?;
    Ok(dir)
}

/// An editor plugin (package.json, README.md, src/) made publishable: its version set, no longer
/// private; the OpenCode plugin's entry is its TypeScript source, which OpenCode (Bun) loads as
/// it loads the checkout's.
fn stage_plugin(src: &Path, dir: &Path, version: &str, ts_main: bool) -> Result<PathBuf> {
    copy_tree(&src.join("src"), &dir.join("src"))?;
    if src.join("README.md").is_file() {
        std::fs::copy(src.join("README.md"), dir.join("README.md")).map_err(|e| format!("{}: {e}", src.display()))?;
    }
    let mut manifest = set_versions(&read_text(&src.join("package.json"))?, version);
    manifest = manifest.lines().filter(|l| l.trim() != "\"private\": true,").collect::<Vec<_>>().join("\n") + "\n";
    if ts_main {
        manifest = manifest
            .lines()
            .filter(|l| !l.trim_start().starts_with("\"types\":"))
            .map(|l| {
                if l.trim_start().starts_with("\"main\":") {
                    "  \"main\": \"src/index.ts\",".into()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
    }
    write(&dir.join("package.json"), manifest.as_bytes())?;
    Ok(dir.to_path_buf())
}

/// A package.json with its `"version"` and every `"@skillmem/…"` dependency set to `version`
/// (one key a line, as these manifests are written).
fn set_versions(manifest: &str, version: &str) -> String {
    let mut out = String::new();
    for line in manifest.lines() {
        let t = line.trim_start();
        let key_end = t.strip_prefix('"').and_then(|r| r.find("\": \"")).map(|i| i + 1);
        match key_end {
            Some(k) if t.starts_with("\"version\"") || t.starts_with("\"@skillmem/") => {
                let indent = &line[..line.len() - t.len()];
                let comma = if t.trim_end().ends_with(',') { "," } else { "" };
                out.push_str(&format!("{indent}{}: \"{version}\"{comma}\n", &t[..=k]));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

fn npm_pack(dir: &Path, out: &Path) -> Result<PathBuf> {
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    let o = Command::new(npm)
        .args(["pack", "--silent", "--pack-destination"])
        .arg(out)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run npm (needed for npm pack): {e}"))?;
    if !o.status.success() {
        return Err(format!("npm pack in {}: {}", dir.display(), String::from_utf8_lossy(&o.stderr)));
    }
    let name = String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or_default().trim().to_string();
    Ok(out.join(name))
}

/// The wheel's platform tag. A Linux binary's tag names the newest glibc symbol version it
/// links (manylinux_2_<that>), so pip installs it only where that glibc is.
fn wheel_tag(platform: &str, bin: &[u8]) -> String {
    let glibc = || {
        let pat = b"GLIBC_2.";
        let mut best = 17;
        for i in 0..bin.len().saturating_sub(pat.len()) {
            if &bin[i..i + pat.len()] == pat {
                let digits: String =
                    bin[i + pat.len()..].iter().take_while(|b| b.is_ascii_digit()).map(|&b| b as char).collect();
                if let Ok(n) = digits.parse::<u32>() {
                    best = best.max(n);
                }
            }
        }
        best
    };
    match platform {
        "linux-x64" => format!("manylinux_2_{}_x86_64", glibc()),
        "linux-arm64" => format!("manylinux_2_{}_aarch64", glibc()),
        "darwin-x64" => "macosx_10_12_x86_64".into(),
        "darwin-arm64" => "macosx_11_0_arm64".into(),
        _ => "win_amd64".into(),
    }
}

/// A wheel holding only the binary as a script (what maturin's `bindings = "bin"` makes).
fn write_wheel(out: &Path, platform: &str, bin: &Path, version: &str, repo: &str) -> Result<PathBuf> {
    let content = std::fs::read(bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let tag = format!("py3-none-{}", wheel_tag(platform, &content));
    let dist = WHEEL_NAME.replace('-', "_");
    let info = format!("{dist}-{version}.dist-info");
    let exe = if platform.starts_with("win32") { "skillmem.exe" } else { "skillmem" };
    let metadata = format!(
        "Metadata-Version: 2.1\nName: {WHEEL_NAME}\nVersion: {version}\nSummary: Skill memory and session skills for AI coding agents: the skillmem binary\nLicense: MIT OR Apache-2.0\nProject-URL: Repository, {repo}\nKeywords: ai,agents,skills,claude-code,mcp\n\nThe `skillmem` command (a Rust binary). `pipx install {WHEEL_NAME}` or `uvx --from {WHEEL_NAME} skillmem setup claude-code`.\n"
    );
    let wheel = format!("Wheel-Version: 1.0\nGenerator: skillmem-xtask\nRoot-Is-Purelib: false\nTag: {tag}\n");
    let files: Vec<(String, &[u8], u32)> = vec![
        (format!("{dist}-{version}.data/scripts/{exe}"), &content, 0o755),
        (format!("{info}/METADATA"), metadata.as_bytes(), 0o644),
        (format!("{info}/WHEEL"), wheel.as_bytes(), 0o644),
    ];
    let mut record = String::new();
    let mut z = zip::Zip::default();
    for (name, bytes, mode) in &files {
        record.push_str(&format!("{name},sha256={},{}\n", zip::base64_url(&zip::sha256(bytes)), bytes.len()));
        z.add(name, bytes, *mode);
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    z.add(&format!("{info}/RECORD"), record.as_bytes(), 0o644);
    let path = out.join(format!("{dist}-{version}-{tag}.whl"));
    write(&path, &z.finish())?;
    Ok(path)
}

fn read_text(p: &Path) -> Result<String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

fn write(p: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::write(p, bytes).map_err(|e| format!("{}: {e}", p.display()))
}

fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    for e in std::fs::read_dir(src).map_err(|e| format!("{}: {e}", src.display()))? {
        let e = e.map_err(|e| format!("{}: {e}", src.display()))?;
        let (from, to) = (e.path(), dst.join(e.file_name()));
        if from.is_dir() {
            copy_tree(&from, &to)?;
        } else {
            std::fs::copy(&from, &to).map_err(|e| format!("{}: {e}", from.display()))?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn set_executable(p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).map_err(|e| format!("{}: {e}", p.display()))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_takes_cargo_features_first() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // (arguments after `bench`, the features, the benchmarks' arguments)
        let cases: [(&[&str], Option<&str>, &[&str]); 4] = [
            (&["recall", "--notes", "10"], None, &["recall", "--notes", "10"]),
            (
                &["--features", "local-model", "recall", "--model", "m"],
                Some("local-model"),
                &["recall", "--model", "m"],
            ),
            (&["--features=local-model", "index"], Some("local-model"), &["index"]),
            (&["index", "--features", "x"], None, &["index", "--features", "x"]),
        ];
        for (given, features, rest) in cases {
            let given = args(given);
            let (f, r) = split_features(&given);
            assert_eq!((f.as_deref(), r), (features, args(rest).as_slice()), "{given:?}");
        }
    }

    #[test]
    fn versions_come_from_cargo_toml() {
        let m = "{\n  \"name\": \"skillmem\",\n  \"version\": \"0.0.1\",\n  \"optionalDependencies\": {\n    \"@skillmem/cli-linux-x64\": \"0.0.1\",\n    \"other\": \"1\"\n  }\n}";
        let s = set_versions(m, "2.3.4");
        assert!(s.contains("  \"version\": \"2.3.4\",\n"), "{s}");
        assert!(s.contains("    \"@skillmem/cli-linux-x64\": \"2.3.4\",\n"), "{s}");
        assert!(s.contains("\"other\": \"1\"") && s.contains("\"name\": \"skillmem\""), "{s}");
        let v = version(&root()).unwrap();
        assert!(v.split('.').count() == 3, "{v}");
    }

    /// Every file that ships from the repository as it is carries Cargo.toml's version, and
    /// the docs' install lines name Cargo.toml's repository.
    #[test]
    fn committed_files_carry_cargo_tomls_version_and_repository() {
        let root = root();
        let v = version(&root).unwrap();
        for f in VERSIONED {
            let found = versions_in(&read_text(&root.join(f)).unwrap());
            assert!(
                !found.is_empty() && found.iter().all(|x| *x == v),
                "{f}: {found:?}, Cargo.toml says {v} (cargo xtask version --set {v})"
            );
        }
        let repo = repository(&root).unwrap();
        let slug = repo.strip_prefix("https://github.com/").expect("a GitHub repository");
        for f in ["README.md", "docs/install.md"] {
            let text = read_text(&root.join(f)).unwrap();
            assert!(
                text.contains(&format!("https://github.com/{slug}/releases/latest/download/skillmem-installer.sh")),
                "{f}"
            );
            assert!(text.contains(&format!("/plugin marketplace add {slug}")), "{f}");
        }
    }

    #[test]
    fn a_staged_manifest_names_the_repository_once() {
        let m = "{\n  \"name\": \"@skillmem/pi\",\n  \"repository\": \"old\",\n  \"version\": \"1.0.0\"\n}\n";
        let s = set_repository(m, "https://github.com/o/skillmem", Some("editors/pi"));
        assert_eq!(s.matches("\"repository\"").count(), 1, "{s}");
        assert!(s.contains("\"url\": \"git+https://github.com/o/skillmem.git\", \"directory\": \"editors/pi\""), "{s}");
        assert_eq!(
            set_script_version("#!/bin/sh\nVERSION=0.1.0\nexec x\n", "2.0.0"),
            "#!/bin/sh\nVERSION=2.0.0\nexec x\n"
        );
        assert_eq!(versions_in("VERSION=2.0.0\n  \"version\": \"2.0.0\",\n"), ["2.0.0", "2.0.0"]);
    }

    #[test]
    fn the_launcher_lists_every_platform() {
        let m = read_text(&root().join("packaging/npm/skillmem/package.json")).unwrap();
        for (p, _) in PLATFORMS {
            assert!(m.contains(&format!("\"@skillmem/cli-{p}\"")), "{p}");
        }
    }

    #[test]
    fn a_linux_wheel_names_the_glibc_its_binary_needs() {
        assert_eq!(wheel_tag("linux-x64", b"..GLIBC_2.2.5..GLIBC_2.34\0GLIBC_2.17"), "manylinux_2_34_x86_64");
        assert_eq!(wheel_tag("linux-x64", b"static"), "manylinux_2_17_x86_64");
        assert_eq!(wheel_tag("win32-x64", b""), "win_amd64");
    }
}
