//! `cargo xtask dist`: skillmem's release artefacts from release binaries, with no tool beyond
//! npm (for `npm pack`).
//!
//! Writes to `target/dist/` (or `--out DIR`):
//! - `npm/*.tgz`: `skillmem` (a launcher that runs the binary of its platform's package),
//!   `@skillmem/cli-<platform>` for each binary given (the biome/esbuild layout: the launcher's
//!   optionalDependencies list every platform, npm installs the one whose `os`/`cpu` match),
//!   `@skillmem/opencode` (editors/opencode) and `@skillmem/pi` (editors/pi);
//! - `skillmem_cli-<version>-py3-none-<platform>.whl` for each binary: the binary as the
//!   wheel's script (`pipx install skillmem-cli`, `uvx --from skillmem-cli skillmem`);
//! - `SHA256SUMS` of them all.
//!
//! Every version is the workspace's (`[workspace.package] version` of Cargo.toml).

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

cargo xtask version    prints the version every package gets (Cargo.toml's)";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("dist") => dist(&args[1..]),
        Some("version") => version(&root()).map(|v| println!("{v}")),
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
    let text = read_text(&root.join("Cargo.toml"))?;
    let mut in_section = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_section = line == "[workspace.package]";
        } else if in_section {
            if let Some(v) = line.strip_prefix("version").map(str::trim_start).and_then(|l| l.strip_prefix('=')) {
                return Ok(v.trim().trim_matches('"').to_string());
            }
        }
    }
    Err("no version in [workspace.package] of Cargo.toml".into())
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
        for d in dirs {
            made.push(npm_pack(&d, &npm_out)?);
        }
    }
    if wheel {
        for (p, f) in &bins {
            made.push(write_wheel(&out, p, f, &version)?);
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
fn write_wheel(out: &Path, platform: &str, bin: &Path, version: &str) -> Result<PathBuf> {
    let content = std::fs::read(bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let tag = format!("py3-none-{}", wheel_tag(platform, &content));
    let dist = WHEEL_NAME.replace('-', "_");
    let info = format!("{dist}-{version}.dist-info");
    let exe = if platform.starts_with("win32") { "skillmem.exe" } else { "skillmem" };
    let metadata = format!(
        "Metadata-Version: 2.1\nName: {WHEEL_NAME}\nVersion: {version}\nSummary: Skill memory and session skills for AI coding agents: the skillmem binary\nLicense: MIT OR Apache-2.0\nKeywords: ai,agents,skills,claude-code,mcp\n\nThe `skillmem` command (a Rust binary). `pipx install {WHEEL_NAME}` or `uvx --from {WHEEL_NAME} skillmem setup claude-code`.\n"
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
    fn versions_come_from_cargo_toml() {
        let m = "{\n  \"name\": \"skillmem\",\n  \"version\": \"0.0.1\",\n  \"optionalDependencies\": {\n    \"@skillmem/cli-linux-x64\": \"0.0.1\",\n    \"other\": \"1\"\n  }\n}";
        let s = set_versions(m, "2.3.4");
        assert!(s.contains("  \"version\": \"2.3.4\",\n"), "{s}");
        assert!(s.contains("    \"@skillmem/cli-linux-x64\": \"2.3.4\",\n"), "{s}");
        assert!(s.contains("\"other\": \"1\"") && s.contains("\"name\": \"skillmem\""), "{s}");
        let v = version(&root()).unwrap();
        assert!(v.split('.').count() == 3, "{v}");
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
