//! A subnet file with several problems: every one is reported in one run, in the file's
//! order, with its line; and nothing is planned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use provisioning::subnet::{Subnet, SubnetError};

/// The shipped example (valid): its benchmark path resolves from its own directory.
fn example() -> (PathBuf, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sovereign-subnet-13.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}

/// `text` with `line` inserted after the `nth` line that is exactly `anchor`.
fn insert_after(text: &str, anchor: &str, nth: usize, line: &str) -> String {
    let mut seen = 0;
    let mut out = String::new();
    for l in text.lines() {
        out.push_str(l);
        out.push('\n');
        if l == anchor {
            seen += 1;
            if seen == nth {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    assert_eq!(seen.min(nth), nth, "no {nth}th {anchor:?}");
    out
}

fn line_of(text: &str, exact: &str) -> usize {
    text.lines().position(|l| l == exact).unwrap() + 1
}

/// "LINE:COLUMN: reason" of every problem, in the order reported.
fn problems(text: &str) -> Vec<String> {
    let (path, _) = example();
    match Subnet::parse(text, &path, &BTreeMap::new()) {
        Ok(_) => panic!("planned an invalid subnet"),
        Err(SubnetError::Invalid(list)) => list
            .iter()
            .map(|e| format!("{}:{}: {}", e.location.line, e.location.column, e.reason))
            .collect(),
        Err(e) => panic!("{e}"),
    }
}

/// Exactly the `expected` problems, in this order: each on its line and saying its reason.
fn assert_reported(got: &[String], expected: &[(usize, &str)]) {
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for (got, (line, reason)) in got.iter().zip(expected) {
        assert!(
            got.starts_with(&format!("{line}:")) && got.contains(reason),
            "{got} ~ {line}: {reason}"
        );
    }
}

#[test]
fn the_example_is_valid() {
    let (path, text) = example();
    assert!(Subnet::parse(&text, &path, &BTreeMap::new()).is_ok());
}

#[test]
fn two_unknown_keys_are_both_reported_in_line_order() {
    let (_, text) = example();
    // Named so that neither name order nor section order is line order.
    let text = insert_after(&text, "[subnet]", 1, "zz_first = 1");
    let text = insert_after(&text, "[network]", 1, "aa_second = 2");
    let got = problems(&text);
    let (first, second) = (
        line_of(&text, "zz_first = 1"),
        line_of(&text, "aa_second = 2"),
    );
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(
        got[0].starts_with(&format!("{first}:1: unknown field `zz_first` in [subnet]")),
        "{got:#?}"
    );
    assert!(
        got[1].starts_with(&format!(
            "{second}:1: unknown field `aa_second` in [network]"
        )),
        "{got:#?}"
    );
}

#[test]
fn three_unknown_keys_in_three_sections_are_all_reported_in_line_order() {
    let (_, text) = example();
    let text = insert_after(&text, "[network]", 1, "mtu = 9000");
    let text = insert_after(
        &text,
        "name = \"operator-b\"",
        1,
        "email = \"b@example.org\"",
    );
    let text = insert_after(&text, "name = \"node-12\"", 1, "rack = \"r7\"");
    let got = problems(&text);
    let expected = [
        (
            line_of(&text, "mtu = 9000"),
            "unknown field `mtu` in [network]",
        ),
        (
            line_of(&text, "email = \"b@example.org\""),
            "unknown field `email` in [[operator]]",
        ),
        (
            line_of(&text, "rack = \"r7\""),
            "unknown field `rack` in [[node]]",
        ),
    ];
    assert_reported(&got, &expected);
}

/// Unknown keys, values of the wrong type and values out of range, in independent fields
/// and sections: all of them at once, and nothing that only follows from another.
#[test]
fn unknown_keys_and_bad_values_are_reported_together() {
    let (_, text) = example();
    let text = text
        .replace("block_time_seconds = 1.0", "block_time_seconds = -1.0")
        .replace("state_size_gib = 512.0", "state_size_gib = \"big\"")
        .replace("agent_port = 9420", "agent_port = \"http\"")
        .replace(
            "dns = [\"2001:db8:5e1::53\", \"2001:db8:5e2::53\"]",
            "dns = \"2001:db8:5e1::53\"",
        );
    let text = insert_after(&text, "[subnet]", 1, "colour = \"blue\"");
    let text = insert_after(&text, "name = \"node-03\"", 1, "rack = 3");
    let got = problems(&text);
    let at = |needle: &str| line_of(&text, needle);
    let expected = [
        (
            at("colour = \"blue\""),
            "unknown field `colour` in [subnet]",
        ),
        (
            at("block_time_seconds = -1.0"),
            "subnet.block_time_seconds = -1 is outside (0, 600]",
        ),
        (
            at("state_size_gib = \"big\""),
            "subnet.state_size_gib: invalid type: string \"big\"",
        ),
        (
            at("dns = \"2001:db8:5e1::53\""),
            "network.dns: invalid type: string",
        ),
        (
            at("agent_port = \"http\""),
            "network.agent_port: invalid type: string \"http\"",
        ),
        (at("rack = 3"), "unknown field `rack` in [[node]]"),
    ];
    assert_reported(&got, &expected);
}

#[test]
fn missing_fields_are_reported_with_the_rest() {
    let (_, text) = example();
    let text = text.replace("ipv6_gateway = \"2001:db8:5e1::1\"\n", "");
    let text = insert_after(
        &text,
        "name = \"node-13\"",
        1,
        "ipv6 = \"2001:db8:5e1::1d\"",
    );
    let got = problems(&text);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(
        got[0].starts_with(&format!("{}:", line_of(&text, "[network]")))
            && got[0].contains("missing field `ipv6_gateway` in [network]"),
        "{got:#?}"
    );
    assert!(
        got[1].contains("unknown field `ipv6` in [[node]]"),
        "{got:#?}"
    );
}

#[test]
fn a_syntax_error_is_reported_alone_at_its_line() {
    let (_, text) = example();
    let text = insert_after(&text, "[network]", 1, "broken = ");
    let got = problems(&text);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(
        got[0].starts_with(&format!("{}:", line_of(&text, "broken = "))),
        "{got:#?}"
    );
}

/// An entry that did not read is reported once: the nodes that refer to it, and the
/// profile checks that need the profiles directory, say nothing more.
#[test]
fn a_section_that_did_not_read_makes_nothing_else_wrong() {
    let (_, text) = example();
    let text = text
        .replace("name = \"operator-b\"", "name = 2")
        .replace("ipv6_gateway = \"2001:db8:5e1::1\"", "ipv6_gateway = [1]");
    let text = insert_after(
        &text,
        "verifier_endpoint = \"https://verifier.sovereign-eu-1.example.org\"",
        1,
        "profiles_dir = 7",
    );
    let got = problems(&text);
    let expected = [
        (
            line_of(&text, "profiles_dir = 7"),
            "subnet.profiles_dir: invalid type: integer `7`",
        ),
        (
            line_of(&text, "ipv6_gateway = [1]"),
            "network.ipv6_gateway: invalid type: sequence",
        ),
        (
            line_of(&text, "name = 2"),
            "operator.name: invalid type: integer `2`",
        ),
    ];
    assert_reported(&got, &expected);
}
