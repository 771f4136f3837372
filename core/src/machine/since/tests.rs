use super::*;
use crate::event::{Ended, EventKind};
use crate::id::OpId;
use crate::machine::{ChainRead, Event, Machine, RawStep};
use crate::record::Step;
use crate::result::OpState;
use serde_json::json;

fn oid(n: u64) -> Oid {
    Oid::parse(&format!("{n:040x}")).expect("forty hex digits")
}

fn change(text: &str) -> ChangeId {
    ChangeId::parse(text).expect("a change id")
}

fn bay_commit(n: u64, change: &str) -> MainCommit {
    MainCommit {
        oid: oid(n),
        parents: vec![oid(n - 1)],
        at: Timestamp(n * 1000),
        committer: "bay <bay@example>".into(),
        message: format!(
            "fix {change}\n\nChange-Id: {change}\nIntent: fix\nActor: ann\nBay-Op: {change}.1\nBay-Candidate: {change}.1.1\n"
        ),
        off_first_parent: 0,
        brought: Vec::new(),
    }
}

fn outside_commit(n: u64, parents: usize, message: &str) -> MainCommit {
    MainCommit {
        oid: oid(n),
        parents: (0..parents as u64).map(|p| oid(n - 1 + p * 1000)).collect(),
        at: Timestamp(n * 1000),
        committer: "Bob <bob@example>".into(),
        message: message.into(),
        off_first_parent: if parents > 1 { 3 } else { 0 },
        brought: Vec::new(),
    }
}

fn event_step(n: u64, of: &str, state: OpState) -> MainCommit {
    let change = change(of);
    let op = OpId {
        change: change.clone(),
        n: 1,
    };
    let event = BayEvent::ended(Ended {
        runner: "r1",
        change: &change,
        op: &op,
        actor: "ann",
        at: Timestamp(n),
        state,
        code: None,
        merge: None,
    })
    .expect("an end");
    MainCommit {
        oid: oid(10_000 + n),
        parents: vec![oid(10_000 + n - 1)],
        at: Timestamp(n),
        committer: "r1 <r1@example>".into(),
        message: event.to_message(),
        off_first_parent: 0,
        brought: Vec::new(),
    }
}

fn input(merged_only: bool, change: Option<&str>) -> SinceInput {
    SinceInput {
        main: "main".into(),
        cursor: None,
        merged_only,
        change: change.map(self::change),
    }
}

fn remote_with_log(tip: u64) -> Refs {
    Refs::from([
        ("refs/heads/main".to_string(), oid(1)),
        (refs::log("r1"), oid(tip)),
    ])
}

/// A machine given the cursor (`main`, `logs`), whose fetch `remote` answered.
fn fetched_from(main: Oid, logs: BTreeMap<String, Oid>, merged_only: bool, remote: Refs) -> Since {
    let input = SinceInput {
        cursor: Some(Cursor {
            main,
            logs,
            reds: BTreeSet::new(),
        }),
        ..input(merged_only, None)
    };
    fetched(input, remote)
}

/// A machine for `input`, whose fetch `remote` answered.
fn fetched(input: SinceInput, remote: Refs) -> Since {
    let mut machine = Since::new(input, Timestamp(0));
    let (fetch, _) = machine.poll_action().expect("a fetch");
    machine
        .handle(
            Timestamp(0),
            Event::Done(fetch, Completion::Fetched(Ok(remote))),
        )
        .expect("a fetch answer");
    machine
}

#[test]
fn a_cursor_reads_back_as_it_was_written() {
    let cursor = Cursor {
        main: oid(7),
        logs: BTreeMap::from([("r1".to_string(), oid(8)), ("r-2".to_string(), oid(9))]),
        reds: BTreeSet::from([RedMark {
            check: "smoke test".into(),
            environment: "linux".into(),
            merge: oid(6),
        }]),
    };
    let text = cursor.encode();
    assert!(text.starts_with("c1"));
    assert_eq!(Cursor::decode(&text), Ok(cursor));
}

#[test]
fn a_cursor_bay_did_not_return_is_refused_saying_what_to_do() {
    let good = Cursor {
        main: oid(7),
        logs: BTreeMap::new(),
        reds: BTreeSet::new(),
    }
    .encode();
    let (data, sum) = good.split_once('-').expect("a checksum");
    let tampered = format!("{}0-{sum}", &data[..data.len() - 1]);
    for bad in [
        "",
        "garbage",
        "c1zz-00",
        "c1abc-00",
        &format!("{data}-0000000000000000"),
        &tampered,
        &format!(
            "c1{}-{}",
            crate::id::hex(b"not an oid\n"),
            checksum("not an oid\n")
        ),
    ] {
        let why = Cursor::decode(bad).expect_err(bad);
        assert!(why.contains("not a cursor bay returned"), "{why}");
        assert!(why.contains("without a cursor"), "{why}");
    }
}

#[test]
fn a_commit_without_exactly_one_change_id_is_outside_bay_and_says_how_it_came() {
    let history = vec![
        bay_commit(2, "aaaaaaaa"),
        outside_commit(3, 1, "typo"),
        outside_commit(4, 2, "Merge pull request #9"),
        outside_commit(
            5,
            1,
            "two\n\nChange-Id: aaaaaaaa\nChange-Id: bbbbbbbb\nBay-Op: aaaaaaaa.1\n",
        ),
    ];
    let detail = main_only(&history, 5, input(false, None));
    let merges = detail["merges"].as_array().expect("merges");
    assert_eq!(merges.len(), 4);
    assert_eq!(merges[0]["outside_bay"], false);
    assert_eq!(merges[0]["change"], "aaaaaaaa");
    assert_eq!(merges[0]["actor"], "ann");
    assert_eq!(merges[0]["base"], json!(oid(1)));
    assert_eq!(merges[1]["merged_as"], "outside");
    assert_eq!(merges[2]["merged_as"], "merge");
    assert_eq!(
        merges[3]["outside_bay"], true,
        "two Change-Ids are no bay merge"
    );
    assert_eq!(detail["off_first_parent"], 3);
    let events = detail["events"].as_array().expect("events");
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["outside_merge"; 3]);
    assert_eq!(events[0]["id"], format!("outside_merge.{}", oid(3)));
    assert_eq!(detail["more"], false);
    let cursor = Cursor::decode(detail["cursor"].as_str().expect("a cursor")).expect("ours");
    assert_eq!(cursor.main, oid(5));
}

#[test]
fn at_most_500_merges_are_listed_and_the_cursor_goes_on_after_the_last() {
    let history: Vec<MainCommit> = (2..2 + MAX_LISTED as u64 + 1)
        .map(|n| bay_commit(n, "aaaaaaaa"))
        .collect();
    let tip = history.last().expect("commits").oid.clone();
    let detail = list(
        &history,
        &BTreeMap::new(),
        &tip,
        BTreeMap::new(),
        BTreeSet::new(),
        &input(true, None),
    )
    .detail;
    assert_eq!(detail["merges"].as_array().map(Vec::len), Some(MAX_LISTED));
    assert_eq!(detail["more"], true);
    assert!(detail.get("events").is_none(), "--merged lists no events");
    let cursor = Cursor::decode(detail["cursor"].as_str().expect("a cursor")).expect("ours");
    assert_eq!(cursor.main, history[MAX_LISTED - 1].oid);
}

#[test]
fn at_most_500_events_are_listed_and_a_view_sees_only_its_change() {
    let commits: Vec<MainCommit> = (1..MAX_LISTED as u64 + 3)
        .map(|n| {
            let of = if n % 2 == 0 { "aaaaaaaa" } else { "bbbbbbbb" };
            event_step(n, of, OpState::Blocked)
        })
        .collect();
    let logs = BTreeMap::from([("r1".to_string(), commits.clone())]);
    let all = list(
        &[],
        &logs,
        &oid(1),
        BTreeMap::new(),
        BTreeSet::new(),
        &input(false, None),
    )
    .detail;
    assert_eq!(all["events"].as_array().map(Vec::len), Some(MAX_LISTED));
    assert_eq!(all["more"], true);
    let cursor = Cursor::decode(all["cursor"].as_str().expect("a cursor")).expect("ours");
    assert_eq!(cursor.logs["r1"], commits[MAX_LISTED - 1].oid);

    let view = list(
        &[],
        &logs,
        &oid(1),
        BTreeMap::new(),
        BTreeSet::new(),
        &input(false, Some("bbbbbbbb")),
    )
    .detail;
    let events = view["events"].as_array().expect("events");
    assert_eq!(events.len(), MAX_LISTED / 2, "its own among the 500 read");
    assert!(events.iter().all(|e| e["change"] == "bbbbbbbb"));
    assert!(
        events
            .iter()
            .all(|e| e["kind"] == EventKind::Refused.as_str())
    );
    assert_eq!(view["more"], true, "the log holds more than was read");
    let cursor = Cursor::decode(view["cursor"].as_str().expect("a cursor")).expect("ours");
    assert_eq!(
        cursor.logs["r1"],
        commits[MAX_LISTED - 1].oid,
        "on after what was read"
    );

    // A log read whole lists every event of the view's and says no more.
    let short = BTreeMap::from([("r1".to_string(), commits[..10].to_vec())]);
    let view = list(
        &[],
        &short,
        &oid(1),
        BTreeMap::new(),
        BTreeSet::new(),
        &input(false, Some("bbbbbbbb")),
    )
    .detail;
    assert_eq!(view["events"].as_array().map(Vec::len), Some(5));
    assert_eq!(view["more"], false);
}

/// Answers the red read's first action, main's policy, with none: no post check to judge.
fn no_policy(machine: &mut Since) {
    let (id, read) = machine.poll_action().expect("the red read");
    assert_eq!(
        read,
        Action::ReadFile {
            commit: machine.main_tip().expect("main"),
            path: crate::check::plan::POLICY_PATH.into(),
        }
    );
    machine
        .handle(
            Timestamp(0),
            Event::Done(id, Completion::FileRead(Ok(None))),
        )
        .expect("a policy answer");
}

#[test]
fn the_machine_reads_main_and_each_log_after_the_cursor_and_nothing_else() {
    let mut machine = one_log_moved(oid(1));
    no_policy(&mut machine);
    let (history, read) = machine.poll_action().expect("main's history");
    assert_eq!(
        read,
        Action::ReadHistory(HistoryQuery {
            from: Some(oid(1)),
            to: oid(3),
            limit: MAX_LISTED as u32 + 1,
            newest: false,
            since: None,
        })
    );
    let (log, read) = machine.poll_action().expect("the log");
    assert_eq!(
        read,
        Action::ReadHistory(HistoryQuery {
            from: Some(oid(50)),
            to: oid(51),
            limit: MAX_LISTED as u32 + 1,
            newest: false,
            since: None,
        })
    );
    assert!(machine.poll_action().is_none());
    let commits = vec![bay_commit(2, "aaaaaaaa"), bay_commit(3, "bbbbbbbb")];
    machine
        .handle(
            Timestamp(0),
            Event::Done(history, Completion::HistoryRead(Ok(commits))),
        )
        .expect("history");
    let mut merged = event_step(1, "bbbbbbbb", OpState::Merged);
    merged.oid = oid(51);
    machine
        .handle(
            Timestamp(0),
            Event::Done(log, Completion::HistoryRead(Ok(vec![merged]))),
        )
        .expect("log");
    let result = machine.outcome().expect("done");
    assert_eq!(result.detail["merges"].as_array().map(Vec::len), Some(2));
    assert_eq!(result.detail["events"].as_array().map(Vec::len), Some(1));
    let next = Cursor::decode(result.detail["cursor"].as_str().expect("a cursor")).expect("ours");
    assert_eq!(next.main, oid(3));
    assert_eq!(next.logs["r1"], oid(51));
}

#[test]
fn a_cursor_whose_main_commit_this_clone_lacks_fails_saying_to_start_over() {
    let remote = Refs::from([("refs/heads/main".to_string(), oid(3))]);
    let mut machine = fetched_from(oid(1), BTreeMap::new(), true, remote);
    let (history, _) = machine.poll_action().expect("main's history");
    fails_saying_to_start_over(&mut machine, history);
}

#[test]
fn a_first_call_outside_a_view_lists_nothing_and_returns_a_starting_cursor() {
    let mut machine = fetched(input(false, None), remote_with_log(40));
    no_policy(&mut machine);
    assert!(machine.poll_action().is_none(), "nothing more to read");
    let result = machine.outcome().expect("done");
    assert_eq!(result.detail["merges"], json!([]));
    assert_eq!(result.detail["events"], json!([]));
    let cursor = Cursor::decode(result.detail["cursor"].as_str().expect("a cursor")).expect("ours");
    assert_eq!(cursor.main, oid(1));
    assert_eq!(cursor.logs["r1"], oid(40));
}

#[test]
fn unattributed_counts_what_went_around_bay_per_writer_newest_first() {
    let mut merge = outside_commit(5, 2, "Merge pull request #9");
    merge.committer = "Ann <ann@example>".into();
    let commits = vec![
        bay_commit(2, "aaaaaaaa"),
        outside_commit(3, 1, "typo"),
        outside_commit(4, 1, "another"),
        merge,
    ];
    let value = unattributed(50, &commits).to_json();
    assert_eq!(value["window"], 50);
    assert_eq!(value["count"], 3);
    assert_eq!(value["through_bay"], 1);
    assert_eq!(
        value["by_writer"],
        json!([
            { "writer": "Bob <bob@example>", "count": 2 },
            { "writer": "Ann <ann@example>", "count": 1 },
        ])
    );
    let merges = value["merges"].as_array().expect("merges");
    let listed: Vec<&Value> = merges.iter().map(|m| &m["commit"]).collect();
    assert_eq!(
        listed,
        [&json!(oid(5)), &json!(oid(4)), &json!(oid(3))],
        "newest first"
    );
    assert_eq!(merges[0]["merged_as"], "merge");
    assert_eq!(merges[0]["merged_count"], 3);
    assert_eq!(merges[1]["merged_as"], "outside");
    assert_eq!(value["off_first_parent"], 3);
}

/// A merge outside bay (parents: an outside commit, then a bay merge it put off the line).
fn hiding_merge() -> (MainCommit, MainCommit) {
    let hidden = bay_commit(20, "cccccccc");
    let mut merge = outside_commit(6, 2, "Merge branch main of the forge");
    merge.parents = vec![oid(5), hidden.oid.clone()];
    merge.off_first_parent = 1;
    merge.brought = vec![hidden.clone()];
    (merge, hidden)
}

#[test]
fn a_bay_merge_put_off_the_line_is_listed_with_via_and_its_merge_is_not_linear() {
    let (merge, hidden) = hiding_merge();
    let history = vec![outside_commit(5, 1, "local"), merge.clone()];
    let detail = main_only(&history, 6, input(false, None));
    let merges = list_of(&detail, "merges");
    let commits: Vec<&Value> = merges.iter().map(|m| &m["commit"]).collect();
    assert_eq!(
        commits,
        [&json!(oid(5)), &json!(hidden.oid), &json!(merge.oid)]
    );
    assert_eq!(merges[1]["via"], json!(merge.oid));
    assert_eq!(merges[1]["change"], "cccccccc");
    assert_eq!(merges[1]["outside_bay"], false);
    let events = list_of(&detail, "events");
    let not_linear: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "main_not_linear")
        .collect();
    assert_eq!(not_linear.len(), 1, "{detail:?}");
    assert_eq!(not_linear[0]["merges_off_first_parent"], 1);
    assert_eq!(not_linear[0]["capped"], false);
    let schema: Value = serde_json::from_str(crate::schema::EVENT).expect("the schema");
    for event in events {
        crate::schema::validate(&schema, event).expect("every event fits bay.event/1");
    }

    // In a view, only when the hidden merge is its change; never with --merged.
    let view = |change| main_only(&history, 6, input(false, Some(change)));
    assert_eq!(list_of(&view("cccccccc"), "events").len(), 1);
    assert_eq!(list_of(&view("dddddddd"), "events").len(), 0);
    let merged_only = main_only(&history, 6, input(true, None));
    assert!(merged_only.get("events").is_none());
}

#[test]
fn unattributed_counts_a_bay_merge_put_off_the_line_at_its_merge_and_warns() {
    let (mut merge, hidden) = hiding_merge();
    merge.off_first_parent = 2;
    let commits = vec![outside_commit(5, 1, "local"), merge.clone()];
    let value = unattributed(50, &commits).to_json();
    assert_eq!(value["count"], 2);
    assert_eq!(
        value["through_bay"], 1,
        "the hidden bay merge counts at its merge"
    );
    assert_eq!(value["merges_off_first_parent"], 1);
    assert_eq!(
        value["landings_off_first_parent_capped"], true,
        "one of two read"
    );
    assert_eq!(value["merges"][0]["merged"], json!([hidden.oid]));
    let warnings = not_linear_warnings(&commits);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0]["warning"], "main_not_linear");
    assert_eq!(warnings[0]["commit"], json!(merge.oid));
    assert_eq!(warnings[0]["parents"], json!(merge.parents));
    assert_eq!(
        value,
        json!({
            "window": 50,
            "count": 2,
            "by_writer": [{"writer": "Bob <bob@example>", "count": 2}],
            "through_bay": 1,
            "merges": [
                {
                    "commit": merge.oid,
                    "base": oid(5),
                    "at": merge.at,
                    "subject": "Merge branch main of the forge",
                    "merged_as": "merge",
                    "merged": [hidden.oid],
                    "merged_count": 2,
                    "merges_off_first_parent": 1,
                },
                {
                    "commit": oid(5),
                    "base": oid(4),
                    "at": Timestamp(5000),
                    "subject": "local",
                    "merged_as": "outside",
                    "merged": [],
                    "merged_count": 0,
                    "merges_off_first_parent": 0,
                },
            ],
            "off_first_parent": 2,
            "merges_off_first_parent": 1,
            "landings_off_first_parent_capped": true,
        })
    );
    assert_eq!(
        warnings[0],
        json!({
            "warning": "main_not_linear",
            "commit": merge.oid,
            "parents": merge.parents,
            "merges_off_first_parent": 1,
            "capped": true,
            "hint": "require linear history for main on your host, so only fast-forward pushes reach it",
        })
    );
}

fn list_of<'a>(detail: &'a Map<String, Value>, key: &str) -> &'a Vec<Value> {
    detail[key].as_array().expect("a list")
}

#[test]
fn the_sentence_counts_what_came_and_says_where_to_go_on_in_plain_words() {
    let history = vec![bay_commit(2, "aaaaaaaa"), outside_commit(3, 1, "typo")];
    let Listing { detail, outside } = listing(&history, 3, input(false, None));
    let text = sentence(&detail, outside);
    assert_eq!(
        text,
        "2 saved versions reached main (1 of them outside bay) and 1 event was listed since \
         the cursor; pass detail.cursor to --since next time."
    );
    assert_eq!(crate::words::forbidden_word(&text), None);
    let merged_only = listing(&history, 3, input(true, None));
    assert!(!sentence(&merged_only.detail, merged_only.outside).contains("events"));
}

/// The listing of `history` alone (no logs, no earlier cursor) with main at `oid(main)`.
fn main_only(history: &[MainCommit], main: u64, input: SinceInput) -> Map<String, Value> {
    listing(history, main, input).detail
}

/// [`main_only`], with the count of merges outside bay the sentence takes.
fn listing(history: &[MainCommit], main: u64, input: SinceInput) -> Listing {
    list(
        history,
        &BTreeMap::new(),
        &oid(main),
        BTreeMap::new(),
        BTreeSet::new(),
        &input,
    )
}

#[test]
fn a_cursor_whose_log_tip_this_clone_lacks_fails_saying_to_start_over() {
    let mut machine = one_log_moved(oid(3));
    no_policy(&mut machine);
    let (log, read) = machine
        .poll_action()
        .expect("the log alone: main did not move");
    assert!(matches!(read, Action::ReadHistory(HistoryQuery { to, .. }) if to == oid(51)));
    fails_saying_to_start_over(&mut machine, log);
}

/// A machine whose cursor names main at `main` and log `r1` at 50, and whose fetch found main
/// at 3 and the log at 51.
fn one_log_moved(main: Oid) -> Since {
    let logs = BTreeMap::from([("r1".to_string(), oid(50))]);
    let remote = Refs::from([
        ("refs/heads/main".to_string(), oid(3)),
        (refs::log("r1"), oid(51)),
    ]);
    fetched_from(main, logs, false, remote)
}

/// Answers the read `id` with a fault; the command must fail, saying to start over.
fn fails_saying_to_start_over(machine: &mut Since, id: crate::machine::ActionId) {
    let fault = crate::machine::Fault("bad revision".into());
    machine
        .handle(
            Timestamp(0),
            Event::Done(id, Completion::HistoryRead(Err(fault))),
        )
        .expect("a fault");
    let text = serde_json::to_string(machine.outcome().expect("done")).expect("a result");
    assert!(text.contains("without a cursor"), "{text}");
}

#[test]
fn a_first_call_in_a_view_reads_each_log_back_to_its_change_s_start_only() {
    let ours = change("aaaaaaaa");
    let started = Timestamp::from_secs(90_000);
    let start = Step {
        change: ours.clone(),
        at: started,
        by: "ann".into(),
        nonce: 1,
        body: crate::record::StepBody::first_start("fix", "ann", &["src/"], oid(1)),
    };
    let mut remote = remote_with_log(40);
    remote.insert(refs::change(&ours), oid(70));
    let mut machine = fetched(input(false, Some("aaaaaaaa")), remote);
    no_policy(&mut machine);
    let (read, action) = machine.poll_action().expect("the change's chain");
    assert!(matches!(action, Action::ReadChains { .. }), "{action:?}");
    let chain = ChainRead {
        change: ours.clone(),
        tip: oid(70),
        steps: vec![RawStep {
            oid: oid(70),
            message: start.to_message(),
        }],
        reached_known: false,
        unreadable: None,
    };
    machine
        .handle(
            Timestamp(0),
            Event::Done(read, Completion::ChainsRead(Ok(vec![chain]))),
        )
        .expect("the chain");
    let logs: Vec<HistoryQuery> = std::iter::from_fn(|| machine.poll_action())
        .filter_map(|(_, action)| match action {
            Action::ReadHistory(query) if query.to == oid(40) => Some(query),
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        [HistoryQuery {
            from: None,
            to: oid(40),
            limit: MAX_LISTED as u32 + 1,
            newest: false,
            since: Some(Timestamp(started.millis() - LOG_SKEW_MS)),
        }],
        "the log is read back to an hour before the change started, not whole"
    );
}
