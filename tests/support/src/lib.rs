//! What the tests need beside the product, and `cargo xtask bench team` with them: a
//! throwaway PostgreSQL server, `initdb` into a temporary folder, started on a free loopback
//! port, stopped (and removed) on drop. Never a dependency of the product, only a
//! dev-dependency and the benchmarks'.
//!
//! The binaries are looked up on `PATH`, in `/usr/lib/postgresql/*/bin` and in
//! `/usr/local/bin`. PostgreSQL refuses to run as root: as root, the folder is given to the
//! `postgres` user (or `nobody`) and the binaries run as that user through `runuser`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a scratch server could not be started, stopped or reached.
#[derive(Debug)]
pub struct Error(String);

impl Error {
    fn storage(why: impl Into<String>) -> Error {
        Error(why.into())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The superuser of a scratch server.
pub const ADMIN: &str = "skillmem_admin";
/// Its password.
pub const ADMIN_PASSWORD: &str = "scratch-admin-pw";

/// A running scratch server.
pub struct ScratchServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<String>,
    pub port: u16,
}

/// The folder holding `initdb`, `pg_ctl` and `postgres`, or what to install.
pub fn find_bin() -> Result<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = rd.flatten().map(|e| e.path().join("bin")).collect();
        versions.sort();
        versions.reverse();
        dirs.extend(versions);
    }
    dirs.push(PathBuf::from("/usr/local/bin"));
    dirs.into_iter()
        .find(|d| ["initdb", "pg_ctl", "postgres"].iter().all(|b| d.join(b).is_file()))
        .ok_or_else(|| {
            Error::storage(
                "PostgreSQL's server binaries (initdb, pg_ctl, postgres) were not found on PATH, in /usr/lib/postgresql/*/bin or /usr/local/bin; install PostgreSQL (Debian/Ubuntu: apt-get install postgresql; .ci/run does this)",
            )
        })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn user_exists(name: &str) -> bool {
    Command::new("id").arg("-u").arg(name).output().is_ok_and(|o| o.status.success())
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

impl ScratchServer {
    /// initdb and start. Fails with what to install when PostgreSQL is missing.
    pub fn start() -> Result<ScratchServer> {
        let bin = find_bin()?;
        let dir = tempfile::Builder::new().prefix("skillmem-pg-").tempdir()?;
        let run_as = if is_root() {
            let user = ["postgres", "nobody"].into_iter().find(|u| user_exists(u)).ok_or_else(|| {
                Error::storage("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as")
            })?;
            Some(user.to_string())
        } else {
            None
        };
        std::fs::write(dir.path().join("pw"), ADMIN_PASSWORD)?;
        if let Some(u) = &run_as {
            let st = Command::new("chown").arg("-R").arg(format!("{u}:")).arg(dir.path()).status()?;
            if !st.success() {
                return Err(Error::storage(format!("cannot give {} to {u}", dir.path().display())));
            }
        }
        let port = free_port()?;
        let s = ScratchServer { dir, bin, run_as, port };
        let data = s.data();
        let pw = s.dir.path().join("pw");
        s.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                ADMIN,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                &format!("--pwfile={}", pw.display()),
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )?;
        s.start_again()?;
        Ok(s)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<()> {
        let exe = self.bin.join(tool);
        let mut cmd = match &self.run_as {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(u).arg("--").arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.args(args).current_dir(self.dir.path());
        let out = cmd.output().map_err(|e| Error::storage(format!("cannot run {}: {e}", exe.display())))?;
        if !out.status.success() {
            let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
            return Err(Error::storage(format!(
                "{tool} failed: {}{}\n{log}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            )));
        }
        Ok(())
    }

    /// Starts the server (again) on its port; returns once it accepts connections.
    pub fn start_again(&self) -> Result<()> {
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c fsync=off -c max_connections=50",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.run("pg_ctl", &["-D", &self.data(), "-l", &log, "-o", &opts, "-w", "-t", "60", "start"])
    }

    /// Stops the server at once (`-m immediate`: connections are cut, as in a crash).
    pub fn stop(&self) -> Result<()> {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "immediate", "-w", "stop"])
    }

    /// A URL for `user` on database `db` (no password: it comes from the environment).
    pub fn url(&self, user: &str, db: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/{db}?sslmode=disable", self.port)
    }

    /// Runs SQL as the superuser on `db`.
    pub fn admin_sql(&self, db: &str, sql: &str) -> Result<()> {
        let mut c = self.admin(db)?;
        c.batch_execute(sql).map_err(|e| {
            let why = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_else(|| e.to_string());
            Error::storage(format!("admin SQL failed: {why}"))
        })
    }

    /// A superuser connection to `db`.
    pub fn admin(&self, db: &str) -> Result<postgres::Client> {
        let mut cfg: postgres::Config = self.url(ADMIN, db).parse().map_err(|e| Error::storage(format!("{e}")))?;
        cfg.password(ADMIN_PASSWORD);
        cfg.connect(postgres::NoTls).map_err(|e| Error::storage(format!("cannot connect as the admin: {e}")))
    }

    /// The server's folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ScratchServer {
    fn drop(&mut self) {
        let _ = self.run("pg_ctl", &["-D", &self.data(), "-m", "immediate", "-w", "stop"]);
    }
}
