//! A small JSON Schema validator: the subset bay's own schemas use (`schemas/*.json`), so that
//! tests can hold every document bay prints to the schema it publishes, and a check author's
//! result can be tested against its contract.
//!
//! Keywords: `type`, `const`, `enum`, `required`, `properties`, `additionalProperties`,
//! `items`, `minimum`, `minLength`, `pattern`, `oneOf`, `anyOf`, `not`, and `$ref` to
//! `#/$defs/<name>`. A schema using another keyword is refused rather than half-checked.
//! `pattern` takes anchors, literals, `\` escapes, `[...]` classes with ranges, `(a|b)`
//! groups and the quantifiers `*`, `+`, `?` and `{n}`.

use serde_json::Value;

/// The schemas bay publishes, as compiled into it.
pub const RESULT: &str = include_str!("../../schemas/bay.result.schema.json");
pub const CHECK_REQUEST: &str = include_str!("../../schemas/bay.check.request.schema.json");
pub const CHECK_RESULT: &str = include_str!("../../schemas/bay.check.result.schema.json");
pub const EVENT: &str = include_str!("../../schemas/bay.event.schema.json");

/// Keywords that describe and do not constrain.
const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "title", "description", "$defs"];

/// Validates `doc` against `schema`; every way it fails, each with the path where.
pub fn validate(schema: &Value, doc: &Value) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    check(schema, schema, doc, "$", &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn check(root: &Value, schema: &Value, doc: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(rules) = schema.as_object() else {
        if schema != &Value::Bool(true) {
            errors.push(format!("{at}: the schema here is not an object"));
        }
        return;
    };
    for (keyword, rule) in rules {
        match keyword.as_str() {
            "type" => {
                let names: Vec<&str> = match rule {
                    Value::String(name) => vec![name],
                    Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                if !names.iter().any(|name| is_type(doc, name)) {
                    errors.push(format!(
                        "{at}: expected {}, found {}",
                        names.join(" or "),
                        kind(doc)
                    ));
                }
            }
            "const" if doc != rule => errors.push(format!("{at}: expected {rule}, found {doc}")),
            "enum" if !rule.as_array().is_some_and(|values| values.contains(doc)) => {
                errors.push(format!("{at}: {doc} is not one of {rule}"));
            }
            "required" => {
                for name in rule
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if doc.as_object().is_some_and(|o| !o.contains_key(name)) {
                        errors.push(format!("{at}: `{name}` is required"));
                    }
                }
            }
            "properties" => {
                let (Some(doc), Some(props)) = (doc.as_object(), rule.as_object()) else {
                    continue;
                };
                for (name, value) in doc {
                    if let Some(sub) = props.get(name) {
                        check(root, sub, value, &format!("{at}.{name}"), errors);
                    }
                }
            }
            "additionalProperties" => {
                let Some(doc) = doc.as_object() else { continue };
                let known = rules.get("properties").and_then(Value::as_object);
                for (name, value) in doc {
                    if known.is_some_and(|k| k.contains_key(name)) {
                        continue;
                    }
                    match rule {
                        Value::Bool(false) => {
                            errors.push(format!("{at}: `{name}` is not allowed here"))
                        }
                        Value::Bool(true) => {}
                        sub => check(root, sub, value, &format!("{at}.{name}"), errors),
                    }
                }
            }
            "items" => {
                for (i, item) in doc.as_array().into_iter().flatten().enumerate() {
                    check(root, rule, item, &format!("{at}[{i}]"), errors);
                }
            }
            "minimum" => {
                if let (Some(x), Some(min)) = (doc.as_f64(), rule.as_f64())
                    && x < min
                {
                    errors.push(format!("{at}: {x} is below {min}"));
                }
            }
            "minLength" => {
                if let (Some(text), Some(min)) = (doc.as_str(), rule.as_u64())
                    && (text.chars().count() as u64) < min
                {
                    errors.push(format!("{at}: shorter than {min} characters"));
                }
            }
            "pattern" => {
                if let (Some(text), Some(pattern)) = (doc.as_str(), rule.as_str()) {
                    match Pattern::parse(pattern) {
                        Ok(compiled) if compiled.is_match(text) => {}
                        Ok(_) => errors.push(format!("{at}: {text:?} does not match {pattern}")),
                        Err(why) => errors.push(format!("{at}: the pattern {pattern} {why}")),
                    }
                }
            }
            "oneOf" | "anyOf" => {
                let passing = rule
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|sub| {
                        let mut inner = Vec::new();
                        check(root, sub, doc, at, &mut inner);
                        inner.is_empty()
                    })
                    .count();
                let ok = if keyword == "oneOf" {
                    passing == 1
                } else {
                    passing >= 1
                };
                if !ok {
                    errors.push(format!("{at}: matches {passing} of the {keyword} schemas"));
                }
            }
            "not" => {
                let mut inner = Vec::new();
                check(root, rule, doc, at, &mut inner);
                if inner.is_empty() {
                    errors.push(format!("{at}: matches a schema it must not"));
                }
            }
            "$ref" => match rule.as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
                Some(name) => match root.get("$defs").and_then(|defs| defs.get(name)) {
                    Some(sub) => check(root, sub, doc, at, errors),
                    None => errors.push(format!("{at}: no definition {name}")),
                },
                None => errors.push(format!("{at}: only #/$defs/ references are supported")),
            },
            "const" | "enum" => {}
            other if ANNOTATIONS.contains(&other) => {}
            other => errors.push(format!(
                "{at}: the keyword {other} is not supported by this validator"
            )),
        }
    }
}

fn is_type(doc: &Value, name: &str) -> bool {
    match name {
        "object" => doc.is_object(),
        "array" => doc.is_array(),
        "string" => doc.is_string(),
        "boolean" => doc.is_boolean(),
        "null" => doc.is_null(),
        "number" => doc.is_number(),
        "integer" => doc.is_i64() || doc.is_u64(),
        _ => false,
    }
}

fn kind(doc: &Value) -> &'static str {
    match doc {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A compiled `pattern`: a sequence of alternatives, each a sequence of quantified atoms.
#[derive(Debug, Clone)]
struct Pattern {
    alternatives: Vec<Vec<Piece>>,
    anchored_start: bool,
    anchored_end: bool,
}

#[derive(Debug, Clone)]
struct Piece {
    atom: Atom,
    min: usize,
    max: usize,
}

#[derive(Debug, Clone)]
enum Atom {
    Char(char),
    Class(Vec<(char, char)>),
    Group(Vec<Vec<Piece>>),
}

impl Pattern {
    fn parse(pattern: &str) -> Result<Pattern, String> {
        let mut text = pattern;
        let anchored_start = text.starts_with('^');
        if anchored_start {
            text = &text[1..];
        }
        let anchored_end = text.ends_with('$') && !text.ends_with("\\$");
        if anchored_end {
            text = &text[..text.len() - 1];
        }
        let chars: Vec<char> = text.chars().collect();
        let mut pos = 0;
        let alternatives = parse_alternatives(&chars, &mut pos)?;
        if pos != chars.len() {
            return Err(format!("has an unbalanced `)` at {pos}"));
        }
        Ok(Pattern {
            alternatives,
            anchored_start,
            anchored_end,
        })
    }

    fn is_match(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let starts: Vec<usize> = if self.anchored_start {
            vec![0]
        } else {
            (0..=chars.len()).collect()
        };
        starts.into_iter().any(|start| {
            self.alternatives.iter().any(|alt| {
                ends(alt, &chars, start)
                    .into_iter()
                    .any(|end| !self.anchored_end || end == chars.len())
            })
        })
    }
}

fn parse_alternatives(chars: &[char], pos: &mut usize) -> Result<Vec<Vec<Piece>>, String> {
    let mut alternatives = vec![Vec::new()];
    while *pos < chars.len() {
        let atom = match chars[*pos] {
            ')' => break,
            '|' => {
                *pos += 1;
                alternatives.push(Vec::new());
                continue;
            }
            '(' => {
                *pos += 1;
                let inner = parse_alternatives(chars, pos)?;
                if chars.get(*pos) != Some(&')') {
                    return Err("has an unclosed `(`".into());
                }
                *pos += 1;
                Atom::Group(inner)
            }
            '[' => {
                *pos += 1;
                let mut ranges = Vec::new();
                while *pos < chars.len() && chars[*pos] != ']' {
                    let lo = chars[*pos];
                    if chars.get(*pos + 1) == Some(&'-')
                        && chars.get(*pos + 2).is_some_and(|c| *c != ']')
                    {
                        ranges.push((lo, chars[*pos + 2]));
                        *pos += 3;
                    } else {
                        ranges.push((lo, lo));
                        *pos += 1;
                    }
                }
                if chars.get(*pos) != Some(&']') {
                    return Err("has an unclosed `[`".into());
                }
                *pos += 1;
                Atom::Class(ranges)
            }
            '\\' => {
                let escaped = *chars.get(*pos + 1).ok_or("ends in a lone `\\`")?;
                *pos += 2;
                Atom::Char(escaped)
            }
            c => {
                *pos += 1;
                Atom::Char(c)
            }
        };
        let (min, max) = parse_quantifier(chars, pos)?;
        alternatives
            .last_mut()
            .expect("there is always one alternative")
            .push(Piece { atom, min, max });
    }
    Ok(alternatives)
}

fn parse_quantifier(chars: &[char], pos: &mut usize) -> Result<(usize, usize), String> {
    let quantifier = match chars.get(*pos) {
        Some('*') => (0, usize::MAX),
        Some('+') => (1, usize::MAX),
        Some('?') => (0, 1),
        Some('{') => {
            let close = chars[*pos..]
                .iter()
                .position(|c| *c == '}')
                .ok_or("has an unclosed `{`")?
                + *pos;
            let count: String = chars[*pos + 1..close].iter().collect();
            let n = count
                .parse()
                .map_err(|_| format!("has a count {{{count}}} this validator does not read"))?;
            *pos = close;
            (n, n)
        }
        _ => return Ok((1, 1)),
    };
    *pos += 1;
    Ok(quantifier)
}

/// Every position at which `pieces`, matched from `start`, can end.
fn ends(pieces: &[Piece], chars: &[char], start: usize) -> Vec<usize> {
    let Some((first, rest)) = pieces.split_first() else {
        return vec![start];
    };
    let mut out = Vec::new();
    let mut frontier = vec![start];
    let mut count = 0;
    while !frontier.is_empty() {
        if count >= first.min {
            for at in &frontier {
                out.extend(ends(rest, chars, *at));
            }
        }
        if count == first.max {
            break;
        }
        let mut next: Vec<usize> = frontier
            .iter()
            .flat_map(|at| atom_ends(&first.atom, chars, *at))
            .collect();
        next.sort_unstable();
        next.dedup();
        next.retain(|at| !frontier.contains(at) || count < first.min);
        frontier = next;
        count += 1;
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn atom_ends(atom: &Atom, chars: &[char], at: usize) -> Vec<usize> {
    match atom {
        Atom::Char(c) => (chars.get(at) == Some(c))
            .then_some(at + 1)
            .into_iter()
            .collect(),
        Atom::Class(ranges) => chars
            .get(at)
            .filter(|c| ranges.iter().any(|(lo, hi)| (lo..=hi).contains(c)))
            .map(|_| at + 1)
            .into_iter()
            .collect(),
        Atom::Group(alternatives) => alternatives
            .iter()
            .flat_map(|alt| ends(alt, chars, at))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("a published schema is JSON")
    }

    #[test]
    fn patterns_match_what_they_say() {
        let change = Pattern::parse("^[a-z2-7]{8}$").expect("compiles");
        assert!(change.is_match("c7k2m4qa"));
        assert!(!change.is_match("c7k2m4q1"));
        assert!(!change.is_match("c7k2m4qaa"));
        let op = Pattern::parse("^[a-z2-7]{8}\\.[1-9][0-9]*$").expect("compiles");
        assert!(op.is_match("c7k2m4qa.12"));
        assert!(!op.is_match("c7k2m4qa.0"));
        assert!(!op.is_match("c7k2m4qa."));
        let oid = Pattern::parse("^([0-9a-f]{40}|[0-9a-f]{64})$").expect("compiles");
        assert!(oid.is_match(&"a".repeat(40)) && oid.is_match(&"b".repeat(64)));
        assert!(!oid.is_match(&"a".repeat(41)));
        assert!(
            Pattern::parse("ab").expect("compiles").is_match("xaby"),
            "unanchored finds inside"
        );
        assert!(Pattern::parse("(a").is_err() && Pattern::parse("[a").is_err());
    }

    #[test]
    fn the_published_schemas_use_only_what_the_validator_reads() {
        for text in [RESULT, CHECK_REQUEST, CHECK_RESULT] {
            let schema = parse(text);
            // An empty object meets no `required`, so every error is about the schema itself
            // or a missing field, never an unsupported keyword.
            let errors = validate(&schema, &json!({})).err().unwrap_or_default();
            assert!(
                errors.iter().all(|e| !e.contains("not supported")),
                "{errors:?}"
            );
        }
    }

    #[test]
    fn a_result_is_held_to_its_schema() {
        let schema = parse(RESULT);
        let good = json!({"schema": "bay.result/1", "decision": "queued", "say": "Saved.", "op_id": "c7k2m4qa.1",
            "state": "submitted", "waiting_for": "runner", "change": "c7k2m4qa", "evidence": []});
        assert_eq!(validate(&schema, &good), Ok(()));
        for bad in [
            json!({"schema": "bay.result/2", "decision": "ok", "say": "x"}),
            json!({"schema": "bay.result/1", "decision": "done", "say": "x"}),
            json!({"schema": "bay.result/1", "decision": "ok", "say": ""}),
            json!({"schema": "bay.result/1", "decision": "ok", "say": "x", "extra": 1}),
            json!({"schema": "bay.result/1", "decision": "ok", "say": "x", "op_id": "C7K2M4QA.1"}),
            json!({"schema": "bay.result/1", "decision": "ok"}),
        ] {
            assert!(validate(&schema, &bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_result_core_builds_meets_the_published_schema() {
        use crate::reason::ReasonCode;
        use crate::result::{BayResult, OpState, WaitingFor};
        let schema = parse(RESULT);
        let op = crate::id::ChangeId::parse("c7k2m4qa").expect("valid").op(1);
        let mut results: Vec<BayResult> = ReasonCode::ALL
            .iter()
            .map(|code| BayResult::refusal(*code, serde_json::Map::new()))
            .collect();
        results.push(BayResult::failed("the remote did not answer"));
        results.push(BayResult::queued(OpState::Submitted, WaitingFor::Runner).with_op(op.clone()));
        results.push(BayResult::merged(serde_json::Map::new()).with_candidate(op.candidate(2)));
        results.push(
            BayResult::ok(Some(OpState::NoEffect), serde_json::Map::new())
                .with_freshness("a1b2c3d", "now"),
        );
        for result in results {
            let doc = serde_json::to_value(&result).expect("serializes");
            assert_eq!(validate(&schema, &doc), Ok(()), "{doc}");
        }
    }

    #[test]
    fn every_request_core_builds_meets_the_published_schema() {
        use crate::check::{
            ChangeContext, CheckInput, CheckRequest, CheckTarget, CommitTree, Materialized,
            RequestInput,
        };
        use crate::git::Oid;
        let oid = |c: char| Oid::parse(&c.to_string().repeat(40)).expect("an id");
        let request = CheckRequest::build(RequestInput {
            target: CheckTarget {
                id: "unit".into(),
                environment: "linux".into(),
                timeout_s: 60,
                expected_minimum: 1,
                fixtures: vec![],
                inputs: vec![CheckInput::Commit, CheckInput::History],
                materialized: Some(Materialized::Changed),
            },
            policy_revision: "3".into(),
            candidate: CommitTree {
                commit: oid('a'),
                tree: oid('b'),
            },
            base: CommitTree {
                commit: oid('c'),
                tree: oid('d'),
            },
            changed_paths: vec!["src/a".into()],
            change: Some(ChangeContext {
                id: crate::id::ChangeId::parse("c7k2m4qa").expect("valid"),
                intent: "fix".into(),
                actor: "ann".into(),
                revision: oid('e'),
                messages: vec!["one".into()],
            }),
        });
        let sent = request.with_git_dir("/repo/.git/bay/check/a/git");
        let doc: Value = serde_json::from_str(&sent.to_json()).expect("JSON");
        assert_eq!(validate(&parse(CHECK_REQUEST), &doc), Ok(()));
        assert_eq!(doc["materialized"], "changed");
        assert_eq!(doc["git"]["refs"]["revision"], "e".repeat(40));
    }

    #[test]
    fn a_check_result_is_one_of_a_result_or_unavailable() {
        let schema = parse(CHECK_RESULT);
        let tree = "a".repeat(40);
        let result = json!({"schema": "bay.check.result/1", "exercised": {"commit": tree, "tree": tree},
            "plan": {"selected": 1, "completed": 1}, "checks": [{"id": "t", "verdict": "pass"}]});
        assert_eq!(validate(&schema, &result), Ok(()));
        let unavailable = json!({"schema": "bay.check.result/1", "unavailable": "no worker"});
        assert_eq!(validate(&schema, &unavailable), Ok(()));
        let both = json!({"schema": "bay.check.result/1", "unavailable": "x", "exercised": {"commit": tree, "tree": tree},
            "plan": {"selected": 1, "completed": 1}, "checks": []});
        assert!(validate(&schema, &both).is_err());
        let bad_verdict = json!({"schema": "bay.check.result/1", "exercised": {"commit": tree, "tree": tree},
            "plan": {"selected": 1, "completed": 1}, "checks": [{"id": "t", "verdict": "ok"}]});
        assert!(validate(&schema, &bad_verdict).is_err());
    }
}
