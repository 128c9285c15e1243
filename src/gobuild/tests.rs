use std::io::Write;

use proptest::prelude::*;

use super::modinfo::parse;
use super::*;

/// The module information of a module-mode build, as a Go 1.18+ linker
/// writes it: a replaced dependency, a replaced main module is not
/// possible, a quoted build setting, and a line of a future kind.
const INFO: &str = "path\texample.test/cmd/hello\n\
mod\texample.test\tv1.2.3\th1:main=\n\
dep\tgolang.org/x/net\tv0.17.0\th1:net=\n\
dep\tgithub.com/hashicorp/go-plugin\tv1.6.0\th1:plugin=\n\
=>\tgithub.com/fork/go-plugin\tv1.6.1-0.20240101000000-abcdefabcdef\th1:fork=\n\
dep\texample.test/local\tv0.0.0\n\
=>\t../local\t\t\n\
build\t-ldflags=\"-s -w -X main.version=1.2.3\"\n\
build\tCGO_ENABLED=0\n\
build\t\"key with space\"=`raw \\value`\n\
future\tsomething a later toolchain writes\n\
build\tvcs.modified=false";

#[test]
fn module_lines_are_read_as_go_writes_them() {
    let info = parse("go1.21.3".into(), INFO).unwrap();
    assert_eq!(info.go_version, "go1.21.3");
    assert_eq!(info.path, "example.test/cmd/hello");
    let main = info.main.as_ref().unwrap();
    assert_eq!(
        (main.path.as_str(), main.version.as_str(), main.sum.as_str()),
        ("example.test", "v1.2.3", "h1:main=")
    );
    let deps: Vec<(&str, &str, &str)> = info
        .deps
        .iter()
        .map(|d| (d.path.as_str(), d.version.as_str(), d.sum.as_str()))
        .collect();
    assert_eq!(
        deps,
        [
            ("golang.org/x/net", "v0.17.0", "h1:net="),
            ("github.com/hashicorp/go-plugin", "v1.6.0", "h1:plugin="),
            ("example.test/local", "v0.0.0", ""),
        ]
    );
    assert_eq!(info.deps[0].replace, None);
    let fork = info.deps[1].replace.as_deref().unwrap();
    assert_eq!(
        (fork.path.as_str(), fork.version.as_str()),
        (
            "github.com/fork/go-plugin",
            "v1.6.1-0.20240101000000-abcdefabcdef"
        )
    );
    let local = info.deps[2].replace.as_deref().unwrap();
    assert_eq!(
        (
            local.path.as_str(),
            local.version.as_str(),
            local.sum.as_str()
        ),
        ("../local", "", "")
    );
    let settings: Vec<(&str, &str)> = info
        .settings
        .iter()
        .map(|s| (s.key.as_str(), s.value.as_str()))
        .collect();
    // The last line has no newline: Go's reader leaves it out, and so
    // does this one.
    assert_eq!(
        settings,
        [
            ("-ldflags", "-s -w -X main.version=1.2.3"),
            ("CGO_ENABLED", "0"),
            ("key with space", "raw \\value"),
        ]
    );
}

#[test]
fn each_broken_line_is_refused_by_its_number() {
    for (text, line, says) in [
        ("path\tp\nmod\tonly-a-path\n", 2, "2 or 3 expected"),
        ("dep\ta\tv1\th1:x\textra\n", 1, "2 or 3 expected"),
        ("=>\tx\tv1\th1:x\n", 1, "no module on the line before"),
        (
            "dep\ta\tv1\nbuild\tX=1\n=>\tb\tv2\t\n",
            3,
            "no module on the line before",
        ),
        // Only the line right before: not the main module further up.
        (
            "mod\tm\tv1\nbuild\tX=1\n=>\tb\tv2\t\n",
            3,
            "no module on the line before",
        ),
        ("dep\ta\tv1\n=>\tb\tv2\n", 2, "3 expected"),
        ("build\t=v\n", 1, "without a key"),
        ("build\tnoequals\n", 1, "without '='"),
        ("build\t\"open=1\n", 1, "does not end"),
        ("build\t\"k\"x\n", 1, "not followed by '='"),
        ("build\tk=\"\\q\"\n", 1, "not a Go string"),
        ("build\tk=\"\\xZZ\"\n", 1, "not a Go string"),
    ] {
        match parse("go1.22.0".into(), text) {
            Err(GoBuildError::ModInfo { line: l, reason }) => {
                assert_eq!(l, line, "{text:?}: {reason}");
                assert!(reason.contains(says), "{text:?}: {reason}");
            }
            other => panic!("{text:?} was read: {other:?}"),
        }
    }
}

#[test]
fn quoted_values_read_every_go_escape() {
    let text = "build\tk=\"a\\tb\\n\\\\\\\"\\x41\\u00e9\\U0001F600\\101\"\n";
    let info = parse("go1.22.0".into(), text).unwrap();
    assert_eq!(info.settings[0].value, "a\tb\n\\\"A\u{e9}\u{1F600}A");
}

#[test]
fn a_file_of_no_executable_format_has_nothing_and_is_no_error() {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(b"#!/bin/sh\necho hello\n").unwrap();
    assert_eq!(
        read(&f).unwrap(),
        Found::Nothing("not an ELF, Mach-O or PE executable".into())
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever follows an object file's magic, the reader answers, within
    /// its bounds, and never panics.
    #[test]
    fn any_bytes_behind_an_object_magic_are_answered(
        magic in prop::sample::select(vec![
            b"\x7fELF\x02\x01\x01\0".to_vec(),
            b"\x7fELF\x01\x02\x01\0".to_vec(),
            b"\xcf\xfa\xed\xfe".to_vec(),
            b"\xca\xfe\xba\xbe".to_vec(),
            b"MZ".to_vec(),
        ]),
        body in prop::collection::vec(any::<u8>(), 0..4096),
    ) {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&magic).unwrap();
        f.write_all(&body).unwrap();
        let _ = read(&f);
    }

    /// Module information of any text is read or refused, never a panic.
    #[test]
    fn any_module_information_is_read_or_refused(
        lines in prop::collection::vec(
            (prop::sample::select(vec!["path\t", "mod\t", "dep\t", "=>\t", "build\t", ""]), "[ -~\t\"`\\\\=]{0,40}"),
            0..20,
        ),
    ) {
        let text: String = lines.iter().flat_map(|(k, v)| [*k, v.as_str(), "\n"]).collect();
        let _ = parse("go1.22.0".into(), &text);
    }
}
