//! What bay says of a record it cannot read: a queue place that holds no request, a change whose
//! chain does not fold. Such a record is that change's problem alone. A runner passes it over
//! (and writes nothing to it: no write can land on a ref that is not a chain), the queue goes
//! on behind it, and every reader names it the same way: the ref, why, and what a person does
//! about it (`hint`), in the runner's result and in `bay status`.

use serde::Serialize;

use super::Refs;
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::id::{ChangeId, OpId};
use crate::record::{Operation, Step, StepBody};

/// A record bay cannot read, as every reader names it: the ref, why, and what a person does
/// about it. It says `readable: false`, as a readable queue entry beside it says `true`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Unreadable {
    /// A queue place that holds no request bay can read.
    Place {
        #[serde(rename = "ref")]
        name: String,
        readable: bool,
        why: String,
        hint: String,
    },
    /// The operation of a queue place whose change's chain bay cannot read.
    Chain {
        #[serde(rename = "ref")]
        name: String,
        place: String,
        op_id: OpId,
        change: ChangeId,
        readable: bool,
        why: String,
        hint: String,
    },
}

impl Detail for Unreadable {}

impl Unreadable {
    /// The ref it names.
    pub fn name(&self) -> &str {
        match self {
            Unreadable::Place { name, .. } | Unreadable::Chain { name, .. } => name,
        }
    }
}

/// A queue place that holds no request bay can read.
pub fn place(seq: u64, why: &str) -> Unreadable {
    let name = refs::queue(seq);
    let hint = format!(
        "runners pass this place over: the change that waited there asks again with `bay \
         merge`, which takes a new place and removes this one; or remove it from the remote \
         (`git push <remote> :{name}`)"
    );
    Unreadable::Place {
        name,
        readable: false,
        why: why.to_owned(),
        hint,
    }
}

/// The operation of queue place `seq` whose change's chain bay cannot read.
pub fn chain(seq: u64, op: &OpId, why: &str) -> Unreadable {
    Unreadable::Chain {
        name: refs::change(&op.change),
        place: refs::queue(seq),
        op_id: op.clone(),
        change: op.change.clone(),
        readable: false,
        why: why.to_owned(),
        hint: hint_for_chain(&op.change),
    }
}

/// What a person does about a change whose chain bay cannot read.
pub fn hint_for_chain(change: &ChangeId) -> String {
    format!(
        "runners pass this change over: set {} on the remote back to its last step, or remove \
         it and the change's queue place and start the work again with `bay start <intent> --new`",
        refs::change(change)
    )
}

/// Why the live operation `op` of a chain read as `steps` (each with its commit) holds no
/// queue place a runner can read on `remote`: its place is gone, or holds something other than
/// its request. No runner will take such an operation up; the change asks again (`bay merge`),
/// which gives it a new place. `None` when its place holds its request.
pub fn lost_place(remote: &Refs, steps: &[(Oid, Step)], op: &Operation) -> Option<Unreadable> {
    let request = steps.iter().find_map(|(oid, step)| match &step.body {
        StepBody::Request { op: asked, .. } if *asked == op.id => Some(oid),
        _ => None,
    });
    let name = refs::queue(op.seq);
    let why = match remote.get(&name) {
        None => "it is gone from the remote".to_string(),
        Some(held) if Some(held) == request => return None,
        Some(held) => format!("it holds {held}, not the request of {}", op.id),
    };
    Some(Unreadable::Place {
        name,
        readable: false,
        why,
        hint: format!(
            "no runner will pick {} up: submit it again with `bay merge`, which takes a new place",
            op.id
        ),
    })
}

/// The operation whose request queue place `seq` holds, read as `step` (its commit's message,
/// or `None` when it is not a commit); or why it holds none.
pub fn request_at(seq: u64, step: Option<&str>) -> Result<OpId, String> {
    let Some(message) = step else {
        return Err("it points at an object that is not a commit".into());
    };
    match Step::from_message(message) {
        Ok(Step {
            body: StepBody::Request {
                op, seq: written, ..
            },
            ..
        }) if written == seq => Ok(op),
        Ok(Step {
            body: StepBody::Request { seq: written, .. },
            ..
        }) => Err(format!("it holds the request of place {written}")),
        Ok(step) => Err(format!("it holds a {} step, not a request", step.kind())),
        Err(e) => Err(format!("its commit holds no step: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_reads_as_its_own_request_or_says_why_not() {
        assert!(request_at(3, None).is_err_and(|why| why.contains("not a commit")));
        assert!(request_at(3, Some("hello")).is_err_and(|why| why.contains("no step")));
        let named = place(3, "it points at an object that is not a commit").to_json();
        assert_eq!(named["ref"], "refs/bay/queue/0000000003");
        assert_eq!(named["readable"], false);
        assert!(
            named["hint"]
                .as_str()
                .is_some_and(|h| h.contains("bay merge"))
        );
    }

    #[test]
    fn an_unreadable_chain_names_its_ref_place_operation_and_what_to_do() {
        let op = ChangeId::parse("c7k2m4qa").expect("an id").op(2);
        assert_eq!(
            chain(7, &op, "no step").to_json(),
            serde_json::json!({
                "ref": "refs/bay/changes/c7k2m4qa",
                "place": "refs/bay/queue/0000000007",
                "op_id": "c7k2m4qa.2",
                "change": "c7k2m4qa",
                "readable": false,
                "why": "no step",
                "hint": hint_for_chain(&ChangeId::parse("c7k2m4qa").expect("an id")),
            })
        );
    }
}
