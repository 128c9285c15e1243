//! Tests of `config`.

use super::*;
use figment::Jail;

#[test]
fn defaults_environment_and_file_layer_in_order() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "t.toml",
            r#"
            [server]
            listen = "127.0.0.1:9000"
            [cache]
            index_ttl = "5m"
            [upstream.hosts."Registry.Example:443"]
            services = { "providers.v1" = "https://r.example/v1/providers/" }
            [upstream.hosts."only.example"]
            "#,
        )?;
        jail.set_env("TFMIRROR_SERVER__LISTEN", "127.0.0.1:9100");
        let c = Config::load(Some(Path::new("t.toml"))).map_err(|e| e.to_string())?;
        assert_eq!(c.server.listen, "127.0.0.1:9100".parse().unwrap());
        assert_eq!(c.cache.index_ttl, Duration::from_secs(300));
        assert_eq!(c.upstream.request_timeout, Duration::from_secs(60));
        let keys: Vec<&str> = c.upstream.hosts.keys().map(Hostname::as_str).collect();
        assert_eq!(keys, ["only.example", "registry.example"]);
        Ok(())
    });
}

#[test]
fn the_commented_example_is_valid_and_states_the_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/tfmirror.toml");
    let from_example = Figment::from(Serialized::defaults(Config::default()))
        .merge(Toml::file_exact(&path))
        .extract::<Config>()
        .unwrap();
    assert_eq!(from_example, Config::default());
    // The example sets keys itself, not only through the defaults.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("index_ttl = \"10m\""));
}

#[test]
fn unknown_keys_and_bad_values_name_the_key() {
    Jail::expect_with(|jail| {
        jail.create_file("a.toml", "[server]\nlisen = \"1.2.3.4:1\"\n")?;
        let e = Config::load(Some(Path::new("a.toml")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lisen"), "{e}");
        jail.create_file("b.toml", "[cache]\nindex_ttl = \"soon\"\n")?;
        let e = Config::load(Some(Path::new("b.toml")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("index_ttl"), "{e}");
        jail.create_file("c.toml", "[upstream]\nallowed_hosts = [\"a/b\"]\n")?;
        let e = Config::load(Some(Path::new("c.toml")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("allowed_hosts"), "{e}");
        jail.set_env("TFMIRROR_SERVER__NOPE", "1");
        let e = Config::load(None).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        Ok(())
    });
}

#[test]
fn the_shown_configuration_hides_every_token() {
    let mut c = Config::default();
    c.releases.terraform.token = Some("release-secret".into());
    c.watch.oci.push(crate::config::watch::OciTarget {
        target: "registry.example/a".into(),
        username: Some("robot".into()),
        token: Some("oci-secret".into()),
        token_file: None,
        ca_file: None,
    });
    let shown = c.to_toml().unwrap();
    assert!(!shown.contains("release-secret"), "{shown}");
    assert!(!shown.contains("oci-secret"), "{shown}");
    assert!(shown.contains("registry.example/a"), "{shown}");
    assert!(!format!("{:?}", c.watch.oci).contains("oci-secret"));
}
