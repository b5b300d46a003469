//! What a URL leaves out, found where libpq finds it. The password: `PGPASSWORD`, else the
//! password file (`PGPASSFILE`, else `~/.pgpass`), whose first matching line wins. A password
//! file that its group or others may read is ignored with a warning, as libpq ignores it. No
//! password is ever part of a message. The root certificates that verify the server (when
//! the URL has no `sslrootcert`): `PGSSLROOTCERT`, else `~/.postgresql/root.crt`.

use std::path::PathBuf;

use postgres::Config;
use postgres::config::Host;

/// Where a password and the root certificates may come from, as the binary gathered them (the
/// store reads no environment).
#[derive(Clone, Default)]
pub struct PasswordSources {
    /// `PGPASSWORD`.
    pub password: Option<String>,
    /// `PGPASSFILE`.
    pub file: Option<PathBuf>,
    /// The user's home directory, where `.pgpass` is looked for when `PGPASSFILE` is not set,
    /// and `.postgresql/root.crt` when `PGSSLROOTCERT` is not.
    pub home: Option<PathBuf>,
    /// `PGSSLROOTCERT`.
    pub root_cert: Option<PathBuf>,
}

impl std::fmt::Debug for PasswordSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordSources")
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("file", &self.file)
            .field("home", &self.home)
            .field("root_cert", &self.root_cert)
            .finish()
    }
}

impl PasswordSources {
    /// The sources of this process: `PGPASSWORD`, `PGPASSFILE`, `PGSSLROOTCERT` and `HOME`.
    pub fn from_process() -> PasswordSources {
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        PasswordSources {
            password: set("PGPASSWORD").and_then(|v| v.into_string().ok()),
            file: set("PGPASSFILE").map(PathBuf::from),
            home: set("HOME").map(PathBuf::from),
            root_cert: set("PGSSLROOTCERT").map(PathBuf::from),
        }
    }

    /// Where the root certificates are, for a URL without `sslrootcert`.
    pub(crate) fn root_source(&self) -> crate::tls::RootSource {
        use crate::tls::RootSource;
        match (&self.root_cert, &self.home) {
            (Some(path), _) => RootSource::Named(path.clone()),
            (None, Some(home)) => RootSource::Default(home.join(".postgresql").join("root.crt")),
            (None, None) => RootSource::Nowhere,
        }
    }

    /// Gives `config` a password when it has none and a source has one; returns a warning to
    /// show when the password file was ignored.
    pub(crate) fn fill(&self, config: &mut Config) -> Option<String> {
        if config.get_password().is_some() {
            return None;
        }
        if let Some(pw) = &self.password {
            config.password(pw.as_str());
            return None;
        }
        let path = match (&self.file, &self.home) {
            (Some(file), _) => file.clone(),
            (None, Some(home)) => home.join(".pgpass"),
            (None, None) => return None,
        };
        let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file())?;
        if shared(&meta) {
            return Some(format!(
                "the password file {} may be read by its group or others, so it is ignored; make it private with chmod 600 {}",
                path.display(),
                path.display()
            ));
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let (host, port) = match (config.get_hosts().first(), config.get_ports().first()) {
            (Some(Host::Tcp(h)), p) => (h.clone(), p.copied().unwrap_or(5432)),
            // A socket directory matches `localhost`, as in libpq.
            (_, p) => ("localhost".to_owned(), p.copied().unwrap_or(5432)),
        };
        let user = config.get_user().unwrap_or("");
        let db = config.get_dbname().unwrap_or(user);
        if let Some(pw) = lookup(&text, &host, &port.to_string(), db, user) {
            config.password(pw.as_str());
        }
        None
    }
}

#[cfg(unix)]
fn shared(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o077 != 0
}

#[cfg(not(unix))]
fn shared(_: &std::fs::Metadata) -> bool {
    false
}

/// The password of the first line of a password file matching the connection: fields
/// `host:port:database:user:password`, each `*` or the exact value, with `\:` and `\\` escaped.
fn lookup(text: &str, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(fields)
        .find(|f| {
            [host, port, db, user]
                .iter()
                .zip(f.iter())
                .all(|(want, field)| field == "*" || field == want)
        })
        .map(|mut f| f.swap_remove(4))
}

/// A line's five fields, unescaped; `None` for a line with fewer.
fn fields(line: &str) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.last_mut()?.push(next);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut()?.push(c),
        }
    }
    (out.len() == 5).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_gives_the_password() {
        let file = "# comment\n\
                    other:5432:*:*:no\n\
                    db.example:5432:mail:alice:first\\:part\n\
                    *:*:*:alice:fallback\n\
                    short:line\n";
        assert_eq!(
            lookup(file, "db.example", "5432", "mail", "alice").as_deref(),
            Some("first:part")
        );
        assert_eq!(
            lookup(file, "db.example", "6543", "mail", "alice").as_deref(),
            Some("fallback")
        );
        assert_eq!(lookup(file, "db.example", "5432", "mail", "bob"), None);
    }

    #[test]
    fn a_url_password_beats_pgpassword_which_beats_the_file() {
        let dir = std::env::temp_dir().join(format!("mailroom-pgpass-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pgpass");
        std::fs::write(&file, "*:*:*:*:from-file\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let sources = |password: Option<&str>| PasswordSources {
            password: password.map(str::to_owned),
            file: Some(file.clone()),
            home: None,
            root_cert: None,
        };
        let filled = |url: &str, s: PasswordSources| {
            let mut c: Config = url.parse().unwrap();
            let warning = s.fill(&mut c);
            (
                c.get_password()
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
                warning,
            )
        };
        let url_pw = filled("postgres://u:in-url@h/d", sources(Some("env")));
        assert_eq!(url_pw, (Some("in-url".into()), None));
        let env_pw = filled("postgres://u@h/d", sources(Some("env")));
        assert_eq!(env_pw, (Some("env".into()), None));
        let file_pw = filled("postgres://u@h/d", sources(None));
        assert_eq!(file_pw, (Some("from-file".into()), None));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            let (pw, warning) = filled("postgres://u@h/d", sources(None));
            assert_eq!(pw, None, "a file others may read is ignored");
            let warning = warning.unwrap();
            assert!(
                warning.contains("may be read by its group or others")
                    && !warning.contains("from-file"),
                "{warning}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
