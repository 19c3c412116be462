//! AMC's own files, wherever the person allows attachments from.

/// Every file AMC keeps for itself sits in the data directory, which no walk enters: with
/// `/` allowed, none of them can be sent.
#[test]
fn every_file_amc_keeps_is_refused_with_the_root_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = amc_core::config::Config::new(dir.path().to_owned());
    config.attachment_dirs.push("/".into());
    let policy = amc_attach::AttachmentPolicy::new(&config.attachment_dirs, &config.staging_dir(), &config.data_dir)
        .expect("policy");
    assert!(policy.allowed_dirs().contains(&std::path::PathBuf::from("/")));
    let own = [
        config.db_path(),
        config.socket_path(),
        config.admin_token_path(),
        config.test_sender_log(),
        config.data_dir.join(amc_core::config::CONFIG_FILE),
        config.staging_dir().join("s/0-a.txt"),
        config.attachment_cache_dir().join("a.png"),
    ];
    for path in own {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        if !path.exists() {
            std::fs::write(&path, b"private").expect("write");
        }
        assert!(path.starts_with(&config.data_dir), "{} is outside the data directory", path.display());
        let err = policy.check_path(path.to_str().expect("utf8"), 1 << 20).expect_err("AMC's own file");
        assert_eq!(err.code, amc_core::ErrorCode::ValidationFailed, "{}", path.display());
    }
}
