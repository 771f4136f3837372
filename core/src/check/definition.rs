//! A check's definition digest: the SHA-256 of everything that decides what a run of the check
//! does and how it is judged, so that two records with the same digest (on the same input) come
//! from the same check. It is written into every evidence record.
//!
//! It covers the `[[check]]` keys that shape a run (`id`, `environment`, `command`, `env` names
//! never their values, `path`, `fixtures`, `network`, `inputs`, `paths`, `materialize`,
//! `baseline`, `expected_minimum`, `timeout_s`, and `waivable` and `footprint` when set) and what the `adapter` files held, as the
//! driver laid them out (each path with its blob id).

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::policy::CheckSpec;

/// The digest of `spec` run with `adapter`, `(path, blob id)` each, in lower-case hex.
pub fn digest(spec: &CheckSpec, adapter: &[(String, String)]) -> String {
    let mut adapter: Vec<&(String, String)> = adapter.iter().collect();
    adapter.sort();
    let mut definition = json!({
        "id": spec.id,
        "environment": spec.environment,
        "command": spec.command,
        "adapter": adapter,
        "env": spec.env,
        "path": spec.path,
        "fixtures": spec.fixtures.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "network": spec.network,
        "inputs": spec.inputs,
        "paths": spec.paths,
        "materialize": spec.materialize,
        "baseline": spec.baseline,
        "expected_minimum": spec.expected_minimum,
        "timeout_s": spec.timeout_s,
    });
    // Only when set, so that a check without it keeps the digest it had.
    if spec.waivable {
        definition["waivable"] = json!(true);
    }
    // A check that declares its read set is another check: no record made before counts.
    if spec.footprint {
        definition["footprint"] = json!(true);
    }
    let mut hasher = Sha256::new();
    hasher.update(b"bay check definition v1\n");
    hasher.update(definition.to_string().as_bytes());
    crate::id::hex(&hasher.finalize())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::policy::Policy;

    /// The check `unit` of a one-check policy, with `extra` keys.
    pub(in crate::check) fn spec(extra: &str) -> CheckSpec {
        Policy::parse(&format!(
            "revision = 1\n[[check]]\nid = \"unit\"\nenvironment = \"linux\"\ncommand = \"ci/run\"\nadapter = [\"ci/\"]\nexpected_minimum = 1\n{extra}"
        ))
        .expect("a policy")
        .checks
        .remove(0)
    }

    fn blob(path: &str, id: char) -> Vec<(String, String)> {
        vec![(path.to_owned(), id.to_string().repeat(40))]
    }

    #[test]
    fn the_same_check_with_the_same_files_has_one_digest() {
        let a = digest(&spec(""), &blob("ci/run", 'a'));
        assert_eq!(a.len(), 64);
        assert_eq!(a, digest(&spec("# a comment\n"), &blob("ci/run", 'a')));
        let two = [blob("ci/a", 'a'), blob("ci/b", 'b')].concat();
        let reversed: Vec<_> = two.iter().rev().cloned().collect();
        assert_eq!(digest(&spec(""), &two), digest(&spec(""), &reversed));
    }

    #[test]
    fn what_an_adapter_file_holds_and_every_key_that_shapes_a_run_change_it() {
        let base = digest(&spec(""), &blob("ci/run", 'a'));
        assert_ne!(
            base,
            digest(&spec(""), &blob("ci/run", 'b')),
            "adapter contents"
        );
        for extra in [
            "env = [\"TOKEN\"]\n",
            "path = [\"/opt/bin\"]\n",
            "network = true\n",
            "timeout_s = 60\n",
            "inputs = [\"history\"]\n",
            "paths = [\"src/\"]\n",
            "materialize = \"changed\"\n",
            "baseline = \"base\"\n",
            "fixtures = [\"data@sha256:0000000000000000000000000000000000000000000000000000000000000000\"]\n",
        ] {
            assert_ne!(base, digest(&spec(extra), &blob("ci/run", 'a')), "{extra}");
        }
        let paths = "paths = [\"src/\"]\n";
        assert_ne!(
            digest(&spec(paths), &blob("ci/run", 'a')),
            digest(
                &spec(&format!("{paths}footprint = true\n")),
                &blob("ci/run", 'a')
            ),
            "a declared read set"
        );
    }
}
