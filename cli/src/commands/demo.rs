//! `bay demo [--dir <path>]`: bay's main job on a throwaway remote. It makes a bare remote and
//! clones in a temporary folder, commits a config and a policy with a real check, and runs two
//! agents' changes through a runner: one merges, the other conflicts and is repaired. Every
//! step is this same `bay` program, run as an agent or a runner would run it.

use std::path::{Path, PathBuf};
use std::process::Command;

use bay_core::result::BayResult;
use bay_drivers::git::Git;
use serde_json::{Value, json};

use crate::Cli;
use crate::context::failed;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to make the demo's remote and clones (default: a new temporary folder, kept).
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,
}

const CONFIG: &str = "# bay's settings for this repository, read from main.\n[runner]\nlease_s = 30\nheartbeat_s = 5\n";

const POLICY: &str = r#"# What a change must pass before it merges, read from main.
revision = 1

[[check]]
id = "greetings"
environment = "any"
command = ".bay/check-greetings"
adapter = [".bay/check-greetings"]
expected_minimum = 1
timeout_s = 60
path = ["/usr/bin", "/bin"]
"#;

/// A check in plain POSIX sh: one unit per file under `src/`; a file passes when it is not
/// empty and holds no conflict markers.
const CHECK: &str = r#"#!/bin/sh
# A bay check: reads bay.check.request/1 on stdin, prints bay.check.result/1 on stdout.
request=$(cat)
commit=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\1/p')
tree=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\2/p')
units=""
count=0
for file in $(find src -type f | sort); do
  if [ ! -s "$file" ]; then
    verdict='"product_failure","reason":"the file is empty"'
  elif grep -q '^<<<<<<<' "$file"; then
    verdict='"product_failure","reason":"the file still holds conflict markers"'
  else
    verdict='"pass"'
  fi
  units="$units${units:+,}{\"id\":\"$file\",\"verdict\":$verdict}"
  count=$((count + 1))
  echo "checked $file" >&2
done
printf '{"schema":"bay.check.result/1","exercised":{"commit":"%s","tree":"%s"},"plan":{"selected":%d,"completed":%d},"checks":[%s]}\n' \
  "$commit" "$tree" "$count" "$count" "$units"
"#;

/// The demo's folders and what it did so far.
struct Demo {
    root: PathBuf,
    bay: PathBuf,
    json: bool,
    steps: Vec<Value>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    match demo(cli, args) {
        Ok(result) => result,
        Err(why) => failed(why),
    }
}

fn demo(cli: &Cli, args: &Args) -> Result<BayResult, String> {
    let root = match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
            dir.canonicalize()
                .map_err(|e| format!("cannot resolve {}: {e}", dir.display()))?
        }
        None => tempfile::Builder::new()
            .prefix("bay-demo-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary folder: {e}"))?
            .keep(),
    };
    let bay = std::env::current_exe().map_err(|e| format!("cannot find this bay program: {e}"))?;
    let mut demo = Demo {
        root,
        bay,
        json: cli.json,
        steps: Vec::new(),
    };
    demo.say(&format!(
        "A throwaway remote and three clones in {}",
        demo.root.display()
    ));

    // The remote, and a first main with the config, the policy and the check.
    let remote = demo.root.join("remote.git");
    if remote.exists() {
        return Err(format!(
            "{} already holds a demo; pass another --dir",
            demo.root.display()
        ));
    }
    git(
        &demo.root,
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch=main",
            "remote.git",
        ],
    )?;
    let admin = demo.clone_as("admin")?;
    write(&admin, "README.md", "A repository that bay merges into.\n")?;
    write(&admin, "src/greeting.txt", "Hello, world!\n")?;
    write(&admin, ".bay/config.toml", CONFIG)?;
    write(&admin, ".bay/policy.toml", POLICY)?;
    write(&admin, ".bay/check-greetings", CHECK)?;
    make_executable(&admin.join(".bay/check-greetings"))?;
    git(&admin, &["add", "--all"])?;
    git(
        &admin,
        &[
            "commit",
            "--quiet",
            "-m",
            "Set bay up: a config, a policy and a check",
        ],
    )?;
    git(&admin, &["push", "--quiet", "origin", "main"])?;
    demo.say("Main holds .bay/config.toml, .bay/policy.toml and a check, .bay/check-greetings");

    // Two agents start changes on the same file.
    let ann = demo.clone_as("ann")?;
    let bob = demo.clone_as("bob")?;
    let ann_start = demo.bay(
        "ann",
        &ann,
        &[
            "start",
            "say hello in French",
            "--paths",
            "src/greeting.txt",
        ],
    )?;
    let ann_view = view_of(&ann_start)?;
    write(&ann_view, "src/greeting.txt", "Bonjour, le monde !\n")?;
    let ann_merge = demo.bay("ann", &ann_view, &["merge"])?;
    demo.say(&format!(
        "ann asked to merge {}: {}",
        text(&ann_merge, "op_id"),
        text(&ann_merge, "say")
    ));

    let bob_start = demo.bay(
        "bob",
        &bob,
        &[
            "start",
            "say hello in Spanish",
            "--paths",
            "src/greeting.txt",
        ],
    )?;
    let bob_view = view_of(&bob_start)?;
    let bob_change = text(&bob_start, "change");
    write(&bob_view, "src/greeting.txt", "¡Hola, mundo!\n")?;
    let bob_merge = demo.bay("bob", &bob_view, &["merge"])?;
    demo.say(&format!(
        "bob asked to merge {}: {}",
        text(&bob_merge, "op_id"),
        text(&bob_merge, "say")
    ));

    // A runner takes the queue in order: ann's change merges, bob's no longer applies.
    demo.bay("runner", &admin, &["runner", "run", "--once"])?;
    let ann_status = demo.bay("ann", &ann_view, &["status"])?;
    let bob_status = demo.bay("bob", &bob_view, &["status"])?;
    demo.say(&format!(
        "The runner: ann's change is {}; bob's is {} ({})",
        text(&ann_status, "decision"),
        text(&bob_status, "decision"),
        text(&bob_status, "reason")
    ));

    // bob picks the change up again, resolves the conflict, and asks again.
    demo.bay("bob", &bob, &["start", &bob_change])?;
    write(
        &bob_view,
        "src/greeting.txt",
        "Bonjour, le monde !\n¡Hola, mundo!\n",
    )?;
    demo.bay("bob", &bob_view, &["merge"])?;
    demo.bay("runner", &admin, &["runner", "run", "--once"])?;
    let bob_final = demo.bay("bob", &bob_view, &["status"])?;
    demo.say(&format!(
        "After the repair, bob's change is {}",
        text(&bob_final, "decision")
    ));

    git(&admin, &["pull", "--quiet", "origin", "main"])?;
    let log = git(&admin, &["log", "--format=%h %s", "origin/main"])?;
    demo.say(&format!("Main now:\n{}", indent(&log)));
    // The runner's evidence for the tree main now holds: the check's record of bob's repair.
    let evidence = git(
        &remote,
        &[
            "for-each-ref",
            "--count=1",
            "--format=%(refname)",
            "refs/notes/bay/evidence/",
        ],
    )?;
    let tree = git(&admin, &["rev-parse", "origin/main^{tree}"])?;
    let look = vec![
        format!("git -C {} log --oneline origin/main", admin.display()),
        format!(
            "git --git-dir={} log --oneline refs/bay/changes/{bob_change}",
            remote.display()
        ),
        format!(
            "git --git-dir={} for-each-ref refs/bay refs/notes/bay",
            remote.display()
        ),
        format!(
            "git --git-dir={} notes --ref={evidence} show {tree}",
            remote.display()
        ),
    ];
    demo.say(&format!(
        "Look with plain Git:\n{}",
        indent(&look.join("\n"))
    ));
    let merged = [&ann_status, &bob_final]
        .iter()
        .filter(|r| r["decision"] == "merged")
        .count();
    let mut result = BayResult::ok(None, serde_json::Map::new());
    result
        .detail
        .insert("dir".into(), Value::from(demo.root.display().to_string()));
    result.detail.insert("merged".into(), Value::from(merged));
    result
        .detail
        .insert("steps".into(), Value::Array(demo.steps));
    result.detail.insert("look".into(), json!(look));
    result
        .detail
        .insert("main".into(), json!(log.lines().collect::<Vec<_>>()));
    if merged < 2 {
        return Err(format!(
            "the demo expected two merges and saw {merged}; its folders are kept in {} for a look",
            result.detail["dir"]
        ));
    }
    Ok(result)
}

impl Demo {
    /// Tells a person what just happened, on stderr, unless `--json` asked for the document only.
    fn say(&self, line: &str) {
        if !self.json {
            eprintln!("{line}");
        }
    }

    fn clone_as(&self, name: &str) -> Result<PathBuf, String> {
        git(&self.root, &["clone", "--quiet", "remote.git", name])?;
        let dir = self.root.join(name);
        git(&dir, &["config", "user.name", name])?;
        git(
            &dir,
            &["config", "user.email", &format!("{name}@demo.invalid")],
        )?;
        Ok(dir)
    }

    /// Runs this bay as `actor` in `dir`, and returns its result document.
    fn bay(&mut self, actor: &str, dir: &Path, args: &[&str]) -> Result<Value, String> {
        let out = Command::new(&self.bay)
            .arg("-C")
            .arg(dir)
            .arg("--json")
            .args(args)
            .env("BAY_ACTOR", actor)
            .output()
            .map_err(|e| format!("cannot run bay: {e}"))?;
        let doc: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
            format!(
                "bay {} printed no result: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        self.steps.push(json!({ "actor": actor, "command": format!("bay {}", args.join(" ")), "decision": doc["decision"], "say": doc["say"] }));
        Ok(doc)
    }
}

fn view_of(start: &Value) -> Result<PathBuf, String> {
    start["detail"]["view"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| format!("bay start made no view: {}", start["say"]))
}

fn text(doc: &Value, field: &str) -> String {
    doc[field].as_str().unwrap_or("-").to_string()
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `git` in `dir`, through the wrapper every bay call to Git goes through (C locale, a time
/// bound, no variables that point Git elsewhere): its stdout without the final newline.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    Git::in_dir(dir).cmd(args).text().map_err(|e| e.to_string())
}

fn write(dir: &Path, path: &str, content: &str) -> Result<(), String> {
    let file = dir.join(path);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
    }
    std::fs::write(&file, content).map_err(|e| format!("cannot write {}: {e}", file.display()))
}

fn make_executable(file: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", file.display()))
}
