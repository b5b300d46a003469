use super::*;

#[test]
fn shown_urls_never_carry_the_password() {
    let c = parse_url("postgres://alice:s3cret@db.example:6543/mail?sslmode=disable").unwrap();
    assert_eq!(shown_url(&c), "postgres://alice@db.example:6543/mail");
    let c = parse_url("host=h user=u password=pw dbname=d").unwrap();
    assert_eq!(shown_url(&c), "postgres://u@h:5432/d");
}

#[test]
fn shown_urls_keep_the_schema_that_tells_two_mailrooms_apart() {
    let c = parse_url("postgres://u:pw@h/d?options=-c%20search_path%3Dteam_a").unwrap();
    assert_eq!(
        shown_url(&c),
        "postgres://u@h:5432/d?options=-c%20search_path%3Dteam_a"
    );
}

#[test]
fn a_bad_url_is_invalid_without_its_password() {
    let e = parse_url("postgres://alice:s3cret@host:notaport/db").unwrap_err();
    let text = e.to_string();
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(
        text,
        "the PostgreSQL URL's parameter 'port' has a value it does not accept; write a port number"
    );
    assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
}

#[test]
fn a_bad_parameter_is_named_with_what_it_accepts() {
    let cases = [
        (
            "postgres://u:s3cret@h/d?sslmode=bogus",
            "the PostgreSQL URL's parameter 'sslmode' has a value it does not accept; write disable, prefer, require, verify-ca or verify-full",
        ),
        (
            "postgres://u:s3cret@h/d?target_session_attrs=primary",
            "the PostgreSQL URL's parameter 'target_session_attrs' has a value it does not accept; write any, read-write or read-only",
        ),
        (
            "postgres://u:s3cret@h/d?connect_timeout=soon",
            "the PostgreSQL URL's parameter 'connect_timeout' has a value it does not accept; write a whole number of seconds",
        ),
    ];
    for (url, sentence) in cases {
        let e = parse_url(url).unwrap_err();
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid, "{url}");
        assert_eq!(e.to_string(), sentence, "{url}");
    }
    let e = parse_url("postgres://u:s3cret@h/d?sslmdoe=require").unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("the PostgreSQL URL has the parameter 'sslmdoe', which is not a connection parameter mailroom knows; remove it or use one of: user, password, dbname, options, application_name, sslmode,"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
}

#[test]
fn the_quick_open_waits_two_seconds_unless_the_url_says_otherwise() {
    let c = parse_url_with("postgres://u@10.255.255.1/d", QUICK_CONNECT_TIMEOUT).unwrap();
    assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(2)));
    let c = parse_url("postgres://u@10.255.255.1/d").unwrap();
    assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(10)));
    let c = parse_url_with(
        "postgres://u@10.255.255.1/d?connect_timeout=7",
        QUICK_CONNECT_TIMEOUT,
    )
    .unwrap();
    assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(7)));
}

#[test]
fn connections_find_a_silent_server_dead_in_about_a_minute_by_default() {
    let c = parse_url("postgres://u@h/d").unwrap();
    assert!(c.get_keepalives());
    assert_eq!(c.get_keepalives_idle(), Duration::from_secs(30));
    assert_eq!(c.get_keepalives_interval(), Some(Duration::from_secs(10)));
    assert_eq!(c.get_keepalives_retries(), Some(3));
    assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(60)));
    let c = parse_url("host=h user=u dbname=d").unwrap();
    assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(60)));
}

#[test]
fn keepalives_take_libpq_parameters_in_both_forms_of_url() {
    for url in [
        "postgres://u@h/d?keepalives_idle=1&keepalives_interval=2&keepalives_count=4&tcp_user_timeout=2500",
        "host=h user=u keepalives_idle=1 keepalives_interval=2 keepalives_count='4' tcp_user_timeout=2500",
    ] {
        let c = parse_url(url).unwrap();
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(1), "{url}");
        assert_eq!(c.get_keepalives_interval(), Some(Duration::from_secs(2)));
        assert_eq!(c.get_keepalives_retries(), Some(4));
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_millis(2500)));
    }
    // Without a user timeout, the time the keepalives take: idle + interval × count.
    let c =
        parse_url("postgres://u@h/d?keepalives_idle=5&keepalives_interval=1&keepalives_retries=2")
            .unwrap();
    assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(7)));
    // 0 is the system's own user timeout, as in libpq.
    let c = parse_url("postgres://u@h/d?tcp_user_timeout=0").unwrap();
    assert_eq!(c.get_tcp_user_timeout(), None);
    // Keepalives off: nothing of mailroom's own.
    let c = parse_url("postgres://u@h/d?keepalives=0").unwrap();
    assert!(!c.get_keepalives());
    assert_eq!(c.get_tcp_user_timeout(), None);
}

#[test]
fn sslrootcert_system_with_a_mode_that_falls_back_to_clear_text_is_refused() {
    for mode in ["disable", "prefer"] {
        let e = parse_url_for(
            &format!("postgres://u:pw@h/d?sslrootcert=system&sslmode={mode}"),
            CONNECT_TIMEOUT,
            &PasswordSources::default(),
        )
        .unwrap_err();
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
        assert_eq!(
            e.to_string(),
            format!(
                "the PostgreSQL URL names sslrootcert=system with sslmode={mode}, which would go on in clear text when a server declines TLS; write sslmode=verify-full (or leave sslmode out)"
            )
        );
    }
}

#[test]
fn keepalive_values_past_the_kernels_bounds_are_refused_at_parse_time() {
    for (url, name) in [
        (
            "postgres://u@h/d?keepalives_idle=99999999999",
            "keepalives_idle",
        ),
        ("postgres://u@h/d?keepalives_idle=32768", "keepalives_idle"),
        (
            "postgres://u@h/d?keepalives_interval=40000",
            "keepalives_interval",
        ),
        ("postgres://u@h/d?keepalives_count=0", "keepalives_count"),
        ("postgres://u@h/d?keepalives_count=128", "keepalives_count"),
        (
            "postgres://u@h/d?tcp_user_timeout=4294967295",
            "tcp_user_timeout",
        ),
    ] {
        let e = parse_url(url).unwrap_err();
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid, "{url}");
        assert!(
            e.to_string().starts_with(&format!(
                "the PostgreSQL URL's parameter '{name}' has a value it does not accept"
            )),
            "{url}: {e}"
        );
    }
    for url in [
        "postgres://u@h/d?keepalives_idle=32767&keepalives_interval=32767&keepalives_count=127",
        "postgres://u@h/d?tcp_user_timeout=2147483647",
    ] {
        parse_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    }
}

#[test]
fn a_bad_keepalive_parameter_is_named_with_what_it_accepts() {
    let cases = [
        (
            "postgres://u:s3cret@h/d?keepalives_count=many",
            "the PostgreSQL URL's parameter 'keepalives_count' has a value it does not accept; write a whole number of probes",
        ),
        (
            "host=h password=s3cret tcp_user_timeout=-1",
            "the PostgreSQL URL's parameter 'tcp_user_timeout' has a value it does not accept; write a whole number of milliseconds",
        ),
        (
            "postgres://u:s3cret@h/d?keepalives_idle=soon",
            "the PostgreSQL URL's parameter 'keepalives_idle' has a value it does not accept; write a whole number of seconds",
        ),
        (
            "postgres://u:s3cret@h/d?keepalives=yes",
            "the PostgreSQL URL's parameter 'keepalives' has a value it does not accept; write 1 (on) or 0 (off)",
        ),
    ];
    for (url, sentence) in cases {
        let e = parse_url(url).unwrap_err();
        assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid, "{url}");
        assert_eq!(e.to_string(), sentence, "{url}");
    }
}

#[test]
fn tls_parameters_are_taken_out_of_both_forms_of_url() {
    let p = tls_params(
        "postgres://u:pw@h/d?sslmode=verify-full&sslrootcert=%2Ftmp%2Fmy%20ca.pem&options=x",
    );
    assert_eq!(
        p,
        TlsParams {
            rest: "postgres://u:pw@h/d?sslmode=require&options=x".into(),
            sslmode: Some("verify-full".into()),
            root_cert: Some("/tmp/my ca.pem".into()),

            own: Vec::new(),
            idle_given: false,
        }
    );
    let p = tls_params("postgres://u@h/d?sslrootcert=ca.pem");
    assert_eq!(p.rest, "postgres://u@h/d");
    assert_eq!(p.root_cert.as_deref(), Some("ca.pem"));
    let p = tls_params("host=h sslmode = verify-ca sslrootcert='/a b/c\\'d.pem' user=u");
    assert_eq!(
        p,
        TlsParams {
            rest: "host=h sslmode=require  user=u".into(),
            sslmode: Some("verify-ca".into()),
            root_cert: Some("/a b/c'd.pem".into()),

            own: Vec::new(),
            idle_given: false,
        }
    );
    let p = tls_params("postgres://u@h/d?sslmode=disable");
    assert_eq!(p.rest, "postgres://u@h/d?sslmode=disable");
    assert_eq!(p.sslmode.as_deref(), Some("disable"));
}

#[test]
fn verifying_modes_parse_to_an_encrypted_connection_of_the_driver() {
    let c = parse_url("postgres://u@h/d?sslmode=verify-full&sslrootcert=/nowhere.pem").unwrap();
    assert_eq!(c.get_ssl_mode(), postgres::config::SslMode::Require);
    // The last sslmode wins, as in libpq.
    let parsed = parse_parts(
        "postgres://u@h/d?sslmode=verify-full&sslmode=disable",
        CONNECT_TIMEOUT,
    )
    .unwrap();
    assert_eq!(parsed.verify, None);
    assert_eq!(
        parsed.config.get_ssl_mode(),
        postgres::config::SslMode::Disable
    );
}

#[test]
fn a_verifying_mode_without_its_root_file_is_refused_naming_where_it_looked() {
    let nowhere = std::env::temp_dir().join(format!("mailroom-no-home-{}", std::process::id()));
    let sources = PasswordSources {
        home: Some(nowhere.clone()),
        ..PasswordSources::default()
    };
    let e = parse_url_for(
        "postgres://u@h/d?sslmode=verify-full",
        CONNECT_TIMEOUT,
        &sources,
    )
    .unwrap_err();
    assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
    let expected = nowhere.join(".postgresql").join("root.crt");
    assert_eq!(
        e.to_string(),
        format!(
            "sslmode=verify-full needs the certificate of the authority that signed the server's certificate, and there is none at {}; put it there, or name its file with sslrootcert=PATH in the URL (or PGSSLROOTCERT)",
            expected.display()
        )
    );
    // require without a root file encrypts without verifying, as in libpq.
    let (target, _) = parse_url_for(
        "postgres://u@h/d?sslmode=require",
        CONNECT_TIMEOUT,
        &sources,
    )
    .unwrap();
    assert_eq!(
        target.tls.as_ref().map(tls::Tls::roots),
        Some(tls::Roots::None)
    );
    // A file named by PGSSLROOTCERT must exist, whatever the mode that would use it.
    let named = PasswordSources {
        root_cert: Some(nowhere.join("ca.pem")),
        ..sources
    };
    let e = parse_url_for("postgres://u@h/d?sslmode=require", CONNECT_TIMEOUT, &named).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    let e = parse_url_for(
        "postgres://u@h/d?sslmode=verify-ca&sslrootcert=system",
        CONNECT_TIMEOUT,
        &named,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("sslrootcert=system"), "{e}");
    // disable and prefer never look for one, even where PGSSLROOTCERT names "system".
    let system = PasswordSources {
        root_cert: Some("system".into()),
        ..PasswordSources::default()
    };
    for mode in ["disable", "prefer"] {
        for sources in [&named, &system] {
            parse_url_for(
                &format!("postgres://u@h/d?sslmode={mode}"),
                CONNECT_TIMEOUT,
                sources,
            )
            .unwrap();
        }
    }
}

/// A self-signed authority (P-256, valid until 2126), only ever parsed here.
const TEST_CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBjDCCATOgAwIBAgIUBiR+GGHj60EkUd6sJpCEIcJHfhYwCgYIKoZIzj0EAwIw\nGzEZMBcGA1UEAwwQbWFpbHJvb20tdGVzdC1jYTAgFw0yNjEyMDEwNjI0NTJaGA8y\nMTI2MTEwNzA2MjQ1MlowGzEZMBcGA1UEAwwQbWFpbHJvb20tdGVzdC1jYTBZMBMG\nByqGSM49AgEGCCqGSM49AwEHA0IABEZvF500eKpqdiptfjwcSxBbmHjWd3pKD0is\nJJTdQcVepPbkPorcQOv6O3ABMqkFaYlrB2cbPRMkaAfhBbN/L2ajUzBRMB0GA1Ud\nDgQWBBSE+60hZZcol7yNFRQWoHWlKn3J0TAfBgNVHSMEGDAWgBSE+60hZZcol7yN\nFRQWoHWlKn3J0TAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIFjD\nGWUzGNzX9jn9ROPyCU2586v0Fzz0AUx943YZOjwCAiBWf3rWI4PZZF8L2jI4BgVy\nO8yzK22j8E9Yy3Jc4FcKEw==\n-----END CERTIFICATE-----\n";

#[test]
fn the_default_root_file_serves_every_mode_that_verifies() {
    let home = std::env::temp_dir().join(format!("mailroom-ca-home-{}", std::process::id()));
    let file = home.join(".postgresql").join("root.crt");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, TEST_CA).unwrap();
    let sources = PasswordSources {
        home: Some(home.clone()),
        ..PasswordSources::default()
    };
    for mode in ["require", "verify-ca", "verify-full"] {
        let (target, _) = parse_url_for(
            &format!("postgres://u@h/d?sslmode={mode}"),
            CONNECT_TIMEOUT,
            &sources,
        )
        .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(
            target.tls.as_ref().map(tls::Tls::roots),
            Some(tls::Roots::File(&file)),
            "{mode}"
        );
    }
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn a_root_file_that_is_not_a_small_regular_file_is_refused_unread() {
    let dir = std::env::temp_dir().join(format!("mailroom-odd-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let big = dir.join("big.pem");
    std::fs::write(&big, TEST_CA.repeat(8 * 1024)).unwrap();
    let cases = [
        (fifo.clone(), "is not a regular file"),
        ("/dev/zero".into(), "is not a regular file"),
        (dir.clone(), "is not a regular file"),
        (big, "holds more than 4 MiB"),
    ];
    for (path, why) in cases {
        // On a thread: a read that blocks (a FIFO without a writer) fails the test, not
        // hangs it.
        let url = format!(
            "postgres://u@h/d?sslmode=verify-ca&sslrootcert={}",
            path.display()
        );
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let got = parse_url_for(&url, CONNECT_TIMEOUT, &PasswordSources::default())
                .map(|_| ())
                .map_err(|e| (e.kind(), e.to_string()));
            let _ = tx.send(got);
        });
        let got = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{} was read and blocked", path.display()));
        let (kind, text) = got.expect_err("refused");
        assert_eq!(kind, mailroom_core::ErrorKind::Invalid);
        assert_eq!(
            text,
            format!(
                "the root certificate file {} {why}{}",
                path.display(),
                if why.starts_with("holds") {
                    ", more than any set of root certificates; name the PEM file of the authority that signed the server's certificate with sslrootcert=PATH"
                } else {
                    "; name the PEM file of the authority that signed the server's certificate with sslrootcert=PATH"
                }
            )
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_root_file_with_a_cut_off_block_is_refused_in_words() {
    let file = std::env::temp_dir().join(format!("mailroom-cut-ca-{}.pem", std::process::id()));
    let cut: String = TEST_CA.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, cut).unwrap();
    let url = format!(
        "postgres://u@h/d?sslmode=verify-ca&sslrootcert={}",
        file.display()
    );
    let e = parse_url_for(&url, CONNECT_TIMEOUT, &PasswordSources::default()).unwrap_err();
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "the root certificate file {} is not valid PEM (a block has no -----END CERTIFICATE----- line); give a file of -----BEGIN CERTIFICATE----- blocks",
            file.display()
        )
    );
}

#[test]
fn a_root_file_without_certificates_is_refused() {
    let file = std::env::temp_dir().join(format!("mailroom-empty-ca-{}.pem", std::process::id()));
    std::fs::write(&file, "not a certificate\n").unwrap();
    let url = format!(
        "postgres://u@h/d?sslmode=verify-ca&sslrootcert={}",
        file.display()
    );
    let e = parse_url_for(&url, CONNECT_TIMEOUT, &PasswordSources::default()).unwrap_err();
    std::fs::remove_file(&file).unwrap();
    assert_eq!(e.kind(), mailroom_core::ErrorKind::Invalid);
    assert_eq!(
        e.to_string(),
        format!(
            "the root certificate file {} cannot serve as roots: it holds no -----BEGIN CERTIFICATE----- block; give the PEM file of the authority that signed the server's certificate",
            file.display()
        )
    );
}

#[test]
fn scrub_finds_passwords_in_both_forms() {
    assert_eq!(
        password_in("postgres://u:p%40ss@h/d").as_deref(),
        Some("p%40ss")
    );
    assert_eq!(
        password_in("host=h password=x1 user=u").as_deref(),
        Some("x1")
    );
    assert_eq!(password_in("postgres://u@h/d"), None);
}
