use super::*;

#[test]
fn lock_directory_data_is_empty_or_a_native_writers_name() {
    for (data, want) in [
        (&b""[..], true),
        (b"web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042", true),
        // A native reader's name: no reader leaves a record.
        (b"web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-R-0000000042", false),
        // Peers' writer names: no peer writes a record.
        (
            b"_c_0b7d6f5e-1c2a-4e3b-8f9a-0123456789ab-__WRIT__0000000042",
            false,
        ),
        (b"0123456789abcdef0123456789abcdef__lock__0000000042", false),
        (b"42", false),
        (b"\xff\xfe", false),
    ] {
        assert_eq!(
            is_lock_directory_data(data),
            want,
            "{:?}",
            String::from_utf8_lossy(data)
        );
    }
}

const TOKEN: &str = "7f3a0c1e9b2d4f60a1b2c3d4e5f60718";

fn parse(s: &str) -> Result<NodeName, ParseNameReason> {
    s.parse::<NodeName>().map_err(|e| e.reason())
}

#[test]
fn table() {
    use ParseNameReason::*;
    // (name, Ok((identity, has token, mode, seq)) or Err(reason))
    #[allow(clippy::type_complexity)]
    let table: &[(&str, Result<(&str, bool, Mode, i32), ParseNameReason>)] = &[
        ("web01-W-0000000042", Ok(("web01", false, Mode::Write, 42))),
        ("web-01-R-0000000000", Ok(("web-01", false, Mode::Read, 0))),
        ("a-R-2147483647", Ok(("a", false, Mode::Read, i32::MAX))),
        ("a-W--2147483648", Ok(("a", false, Mode::Write, i32::MIN))),
        ("a-W--000000005", Ok(("a", false, Mode::Write, -5))),
        ("x-W-R-0000000001", Ok(("x-W", false, Mode::Read, 1))),
        ("-W-0000000001", Err(EmptyHost)),
        ("a-W-42", Err(BadSequence)),
        ("a-W-00000000042", Err(BadSequence)),
        ("a-W-9999999999", Err(BadSequence)),
        ("a-W--5", Err(BadSequence)),
        ("a-W--0000000005", Err(BadSequence)),
        ("a-W--000000000", Err(BadSequence)),
        ("a-X-0000000001", Err(MissingMode)),
        ("aW-0000000001", Err(MissingMode)),
        ("W-0000000001", Err(MissingMode)),
        ("0000000001", Err(MissingMode)),
        ("lock", Err(MissingSequence)),
        ("", Err(MissingSequence)),
        ("a-W-", Err(MissingSequence)),
    ];
    for (name, want) in table {
        let got = parse(name).map(|n| (n.identity().to_owned(), n.token().is_some(), n.mode(), n.seq()));
        let want = want.map(|(i, t, m, s)| (i.to_owned(), t, m, s));
        assert_eq!(got, want, "parsing {name:?}");
        if let Ok(n) = name.parse::<NodeName>() {
            assert_eq!(n.to_string(), *name, "round trip of {name:?}");
        }
    }
}

const UUID: &str = "7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718";

/// Peer layouts: (name, Ok((layout, host, has token, mode, seq)) or Err(reason)).
#[test]
fn peer_table() {
    use Layout::*;
    use ParseNameReason::*;
    let curator = format!("_c_{UUID}-");
    #[allow(clippy::type_complexity)]
    let table: Vec<(String, Result<(Layout, &str, bool, Mode, i32), ParseNameReason>)> = vec![
        (
            format!("{curator}__READ__0000000043"),
            Ok((Curator, &curator, true, Mode::Read, 43)),
        ),
        (
            format!("{curator}__WRIT__0000000001"),
            Ok((Curator, &curator, true, Mode::Write, 1)),
        ),
        (
            format!("{curator}lock-0000000002"),
            Ok((CuratorMutex, &curator, true, Mode::Write, 2)),
        ),
        (
            format!("{TOKEN}__rlock__0000000003"),
            Ok((Kazoo, TOKEN, true, Mode::Read, 3)),
        ),
        (
            format!("{TOKEN}__lock__0000000004"),
            Ok((Kazoo, TOKEN, true, Mode::Write, 4)),
        ),
        // The peers recognise their nodes by the marker alone.
        (
            "__lock__0000000005".into(),
            Ok((Kazoo, "", false, Mode::Write, 5)),
        ),
        (
            "__rlock__0000000005".into(),
            Ok((Kazoo, "", false, Mode::Read, 5)),
        ),
        (
            "__READ__0000000005".into(),
            Ok((Curator, "", false, Mode::Read, 5)),
        ),
        (
            "lock-0000000006".into(),
            Ok((CuratorMutex, "", false, Mode::Write, 6)),
        ),
        (
            "block-0000000001".into(),
            Ok((CuratorMutex, "b", false, Mode::Write, 1)),
        ),
        (
            "_c_-__WRIT__0000000007".into(),
            Ok((Curator, "_c_-", false, Mode::Write, 7)),
        ),
        (
            "_c_nouuid-__WRIT__0000000007".into(),
            Ok((Curator, "_c_nouuid-", false, Mode::Write, 7)),
        ),
        // Negative and limit sequences after a peer's marker.
        (
            "x__lock__-000000005".into(),
            Ok((Kazoo, "x", false, Mode::Write, -5)),
        ),
        (
            "x__rlock__-2147483648".into(),
            Ok((Kazoo, "x", false, Mode::Read, i32::MIN)),
        ),
        (
            "x__WRIT__2147483647".into(),
            Ok((Curator, "x", false, Mode::Write, i32::MAX)),
        ),
        (
            "lock--000000005".into(),
            Ok((CuratorMutex, "", false, Mode::Write, -5)),
        ),
        ("x__lock__-0000000005".into(), Err(BadSequence)),
        ("x__lock__-000000000".into(), Err(BadSequence)),
        ("x__lock__42".into(), Err(BadSequence)),
        // Names that look like two layouts have one reading: the marker
        // right before the sequence.
        (
            "web__lock__-W-0000000005".into(),
            Ok((Native, "web__lock__", false, Mode::Write, 5)),
        ),
        (
            "__READ__-R-0000000005".into(),
            Ok((Native, "__READ__", false, Mode::Read, 5)),
        ),
        (
            "lock-W-0000000001".into(),
            Ok((Native, "lock", false, Mode::Write, 1)),
        ),
        (
            "a-R-__lock__0000000001".into(),
            Ok((Kazoo, "a-R-", false, Mode::Write, 1)),
        ),
        (
            "a-W-__rlock__0000000001".into(),
            Ok((Kazoo, "a-W-", false, Mode::Read, 1)),
        ),
        (
            "a-W-__READ__0000000001".into(),
            Ok((Curator, "a-W-", false, Mode::Read, 1)),
        ),
        ("x_lock__0000000001".into(), Err(MissingMode)),
        ("x__lock_0000000001".into(), Err(MissingMode)),
        ("x__WRITE__0000000001".into(), Err(MissingMode)),
        ("x__read__0000000001".into(), Err(MissingMode)),
        ("xlock_0000000001".into(), Err(MissingMode)),
        ("x__lock__".into(), Err(MissingSequence)),
    ];
    for (name, want) in &table {
        let got = parse(name).map(|n| {
            (
                n.layout(),
                n.host().to_owned(),
                n.token().is_some(),
                n.mode(),
                n.seq(),
            )
        });
        let want = want.map(|(l, h, t, m, s)| (l, h.to_owned(), t, m, s));
        assert_eq!(got, want, "parsing {name:?}");
        if let Ok(n) = name.parse::<NodeName>() {
            assert_eq!(n.to_string(), *name, "round trip of {name:?}");
            assert!(is_contender_name(name), "{name}");
        } else {
            assert!(!is_contender_name(name), "{name}");
        }
    }
}

/// A peer's token only in the exact form the peer writes it; the
/// identity of a tokened peer name is empty, of any other the prefix.
#[test]
fn peer_tokens_only_in_their_exact_form() {
    let token = Uuid::parse_str(TOKEN).unwrap();
    let ok = [
        (format!("_c_{UUID}-__WRIT__0000000001"), ""),
        (format!("_c_{UUID}-lock-0000000001"), ""),
        (format!("{TOKEN}__lock__0000000001"), ""),
    ];
    for (name, identity) in &ok {
        let n: NodeName = name.parse().unwrap();
        assert_eq!(n.token(), Some(token), "{name}");
        assert_eq!(n.identity(), *identity, "{name}");
    }
    let upper = UUID.to_uppercase();
    let not = [
        format!("_c_{upper}-__WRIT__0000000001"),
        format!("_c_{UUID}__WRIT__0000000001"),
        format!("c_{UUID}-__WRIT__0000000001"),
        format!("_c_{TOKEN}-__WRIT__0000000001"),
        format!("_c_{}x-__WRIT__0000000001", &UUID[1..]),
        format!("x_c_{UUID}-__WRIT__0000000001"),
        format!("_c_{UUID}-x__WRIT__0000000001"),
        format!("_c_{}-__WRIT__0000000001", UUID.replace('-', "_")),
        format!("{}__lock__0000000001", TOKEN.to_uppercase()),
        format!("{}__lock__0000000001", &TOKEN[1..]),
        format!("{TOKEN}0__lock__0000000001"),
        format!("{UUID}__lock__0000000001"),
        format!("{}g__lock__0000000001", &TOKEN[1..]),
        format!("h@{TOKEN}__lock__0000000001"),
        format!("{TOKEN}-W-0000000001"),
        format!("_c_{UUID}--W-0000000001"),
    ];
    for name in &not {
        let n: NodeName = name.parse().unwrap();
        assert_eq!(n.token(), None, "{name}");
        assert_eq!(n.identity(), n.host(), "{name}");
    }
}

#[test]
fn every_layout_writes_what_it_reads() {
    let token = Uuid::parse_str(TOKEN).unwrap();
    let want = [
        (Layout::Native, Mode::Read, format!("h-1@{TOKEN}-R-")),
        (Layout::Native, Mode::Write, format!("h-1@{TOKEN}-W-")),
        (Layout::Curator, Mode::Read, format!("_c_{UUID}-__READ__")),
        (Layout::Curator, Mode::Write, format!("_c_{UUID}-__WRIT__")),
        (Layout::CuratorMutex, Mode::Write, format!("_c_{UUID}-lock-")),
        (Layout::Kazoo, Mode::Read, format!("{TOKEN}__rlock__")),
        (Layout::Kazoo, Mode::Write, format!("{TOKEN}__lock__")),
    ];
    for (layout, mode, prefix) in want {
        assert_eq!(
            layout.prefix("h-1", token, mode).as_deref(),
            Some(&*prefix),
            "{layout} {mode}"
        );
        assert!(layout.supports(mode));
        for seq in [0, 7, -7, i32::MAX, i32::MIN] {
            let n = NodeName::new_in(layout, "h-1", token, mode, seq).unwrap();
            let name = n.to_string();
            assert_eq!(name, format!("{prefix}{seq:010}"));
            let parsed: NodeName = name.parse().unwrap();
            assert_eq!(parsed, n, "{name}");
            assert_eq!(parsed.layout(), layout);
            assert_eq!(parsed.mode(), mode);
            assert_eq!(parsed.seq(), seq);
            assert_eq!(parsed.token(), Some(token));
            let identity = if layout == Layout::Native { "h-1" } else { "" };
            assert_eq!(parsed.identity(), identity);
        }
    }
    assert_eq!(Layout::CuratorMutex.prefix("h", token, Mode::Read), None);
    assert_eq!(Layout::CuratorMutex.marker(Mode::Read), None);
    assert_eq!(
        NodeName::new_in(Layout::CuratorMutex, "h", token, Mode::Read, 1),
        None
    );
    assert!(!Layout::CuratorMutex.supports(Mode::Read));
    assert_eq!(
        NodeName::new_in(Layout::Native, "h-1", token, Mode::Write, 3),
        Some(NodeName::new("h-1", token, Mode::Write, 3))
    );
}

#[test]
fn layouts_have_names_and_libraries() {
    let want = [
        (Layout::Native, "native", "zk-rwlock"),
        (Layout::Curator, "curator", "Curator InterProcessReadWriteLock"),
        (Layout::CuratorMutex, "curator-mutex", "Curator InterProcessMutex"),
        (Layout::Kazoo, "kazoo", "kazoo"),
    ];
    assert_eq!(Layout::ALL.to_vec(), want.iter().map(|w| w.0).collect::<Vec<_>>());
    assert_eq!(Layout::default(), Layout::Native);
    for (layout, name, library) in want {
        assert_eq!(layout.name(), name);
        assert_eq!(layout.to_string(), name);
        assert_eq!(layout.library(), library);
        assert_eq!(name.parse::<Layout>(), Ok(layout));
    }
    assert_eq!(format!("[{:>8}]", Layout::Kazoo), "[   kazoo]");
    let err = "Curator".parse::<Layout>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown layout `Curator`: expected native, curator, curator-mutex or kazoo"
    );
}

#[test]
fn token_is_split_from_identity() {
    let name = format!("web-01@{TOKEN}-W-0000000042");
    let n: NodeName = name.parse().unwrap();
    assert_eq!(n.identity(), "web-01");
    assert_eq!(n.host(), format!("web-01@{TOKEN}"));
    assert_eq!(n.token().map(|t| t.simple().to_string()), Some(TOKEN.to_owned()));
    assert_eq!(n.to_string(), name);
}

#[test]
fn not_a_token_stays_in_identity() {
    for host in [
        format!("a@{}", TOKEN.to_uppercase()),
        format!("a@{}", &TOKEN[1..]),
        format!("@{TOKEN}"),
        "user@host".to_owned(),
    ] {
        let n: NodeName = format!("{host}-R-0000000001").parse().unwrap();
        assert_eq!(n.identity(), host);
        assert_eq!(n.token(), None);
    }
}

#[test]
fn new_and_prefix_agree() {
    let token = Uuid::parse_str(TOKEN).unwrap();
    let n = NodeName::new("h-1", token, Mode::Read, -7);
    assert_eq!(
        NodeName::prefix("h-1", token, Mode::Read),
        format!("h-1@{TOKEN}-R-")
    );
    assert_eq!(n.to_string(), format!("h-1@{TOKEN}-R--000000007"));
    assert_eq!(n.to_string().parse::<NodeName>().unwrap(), n);
}

#[test]
fn contender_names_are_what_parses() {
    for name in [
        "web01-W-0000000001",
        "a-R--000000005",
        &format!("h@{TOKEN}-R-0000000007"),
    ] {
        assert!(is_contender_name(name), "{name}");
    }
    for name in ["orders", "web01-W-1", "web01-X-0000000001", "-W-0000000001", ""] {
        assert!(!is_contender_name(name), "{name}");
    }
}

#[test]
fn error_message_names_the_input() {
    let err = "lock".parse::<NodeName>().unwrap_err();
    assert_eq!(err.name(), "lock");
    assert!(err.to_string().contains("`lock`"), "{err}");
}

#[test]
fn error_message_says_what_is_wrong() {
    use ParseNameReason::*;
    let table = [
        ("lock", MissingSequence, "it does not end in a sequence number"),
        (
            "a-W-42",
            BadSequence,
            "not a signed 32-bit number written as %010d",
        ),
        ("a-X-0000000001", MissingMode, "not preceded by `-R-` or `-W-`"),
        (
            "-W-0000000001",
            EmptyHost,
            "the host part before `-R-`/`-W-` is empty",
        ),
    ];
    for (name, reason, words) in table {
        let err = name.parse::<NodeName>().unwrap_err();
        assert_eq!(err.reason(), reason, "{name:?}");
        assert!(reason.to_string().contains(words), "{reason:?}: {reason}");
        assert!(err.to_string().ends_with(&format!(": {reason}")), "{err}");
    }
}

#[test]
fn mode_letters() {
    assert_eq!((Mode::Read.letter(), Mode::Write.letter()), ('R', 'W'));
    assert_eq!(Mode::from_letter('R'), Some(Mode::Read));
    assert_eq!(Mode::from_letter('W'), Some(Mode::Write));
    assert_eq!(Mode::from_letter('r'), None);
    assert_eq!(Mode::from_letter('X'), None);
}

#[test]
fn modes_print_as_words_and_honour_padding() {
    assert_eq!(Mode::Read.to_string(), "read");
    assert_eq!(Mode::Write.to_string(), "write");
    assert_eq!(
        format!("[{:>6}|{:<6}]", Mode::Read, Mode::Write),
        "[  read|write ]"
    );
}

#[test]
fn release_records() {
    let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
    let other = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000041";
    assert_eq!(release_record(name), name.as_bytes());
    assert_eq!(release_record(""), b"");
    for (record, node, names) in [
        (name.as_bytes(), name, true),
        (other.as_bytes(), name, false),
        (b"", name, false),
        // A record is exact: no prefix, no trailing byte.
        (&name.as_bytes()[..name.len() - 1], name, false),
        (
            b"web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-00000000420",
            name,
            false,
        ),
    ] {
        assert_eq!(
            record_names(record, node),
            names,
            "{:?} names {node}",
            String::from_utf8_lossy(record)
        );
    }
    for (record, want) in [
        (name.as_bytes(), Some(name)),
        (b"web01-W-0000000007", Some("web01-W-0000000007")),
        (b"", None),
        (b"web01-R-0000000007", None),
        (b"0123456789abcdef0123456789abcdef__lock__0000000042", None),
        (b"web01", None),
        (b"\xff\xfe", None),
    ] {
        assert_eq!(
            released_node(record),
            want,
            "{:?}",
            String::from_utf8_lossy(record)
        );
    }
}

#[test]
fn each_peer_recognises_only_its_own_layout() {
    use Layout::*;
    for (layout, recognised) in [
        (Native, &[Native, Curator, CuratorMutex, Kazoo][..]),
        (Curator, &[Curator][..]),
        (CuratorMutex, &[CuratorMutex][..]),
        (Kazoo, &[Kazoo][..]),
    ] {
        let got: Vec<Layout> = Layout::ALL
            .into_iter()
            .filter(|o| layout.recognises(*o))
            .collect();
        assert_eq!(got, recognised, "{layout}");
    }
}

#[test]
fn only_kazoo_is_not_revocable() {
    let revocable: Vec<Layout> = Layout::ALL.into_iter().filter(|l| l.revocable()).collect();
    assert_eq!(revocable, [Layout::Native, Layout::Curator, Layout::CuratorMutex]);
}

#[test]
fn revocation_targets() {
    use RevocationTarget::*;
    let native = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
    let curator = "_c_0b7d6f5e-1c2a-4e3b-8f9a-0123456789ab-__WRIT__0000000003";
    let mutex = "_c_0b7d6f5e-1c2a-4e3b-8f9a-0123456789ab-lock-0000000004";
    let kazoo = "0123456789abcdef0123456789abcdef__rlock__0000000001";
    let kazoo_write = "0123456789abcdef0123456789abcdef__lock__0000000001";
    let not_revocable = |name| NotRevocable {
        name,
        layout: Layout::Kazoo,
    };
    for (node, want) in [
        // A child name, or the full path.
        (native.to_owned(), Ask(native)),
        (format!("/locks/x/{native}"), Ask(native)),
        (curator.to_owned(), Ask(curator)),
        (format!("/locks/x/{mutex}"), Ask(mutex)),
        // kazoo: never written to.
        (kazoo.to_owned(), not_revocable(kazoo)),
        (format!("/locks/x/{kazoo_write}"), not_revocable(kazoo_write)),
        // Another directory, one whose name starts with the same
        // characters, the directory itself.
        (format!("/locks/y/{native}"), NotAContender),
        (format!("/locks/xy/{native}"), NotAContender),
        ("/locks/x".to_owned(), NotAContender),
        ("/locks/x/".to_owned(), NotAContender),
        // A nested lock's node, by full path or relative name.
        (format!("/locks/x/sub/{native}"), NotAContender),
        (format!("sub/{native}"), NotAContender),
        // Not a contender name.
        ("web01".to_owned(), NotAContender),
        ("/locks/x/web01".to_owned(), NotAContender),
        (String::new(), NotAContender),
    ] {
        assert_eq!(revocation_target("/locks/x", &node), want, "{node:?}");
    }
}

#[test]
fn a_release_marker_is_the_name_and_a_suffix_no_layout_parses() {
    for name in [
        "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042",
        "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W--000000005",
        "web01-W-2147483647",
    ] {
        let marker = release_marker(name);
        assert_eq!(marker, format!("{name}.released"));
        assert!(marker.ends_with(RELEASE_MARKER_SUFFIX));
        assert!(parse_parts(&marker).is_err(), "{marker} parses as a contender");
        assert!(marker.parse::<NodeName>().is_err());
        // Distinct names, distinct markers.
        assert_ne!(release_marker(name), release_marker(&format!("{name}0")));
    }
}
