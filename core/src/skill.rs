//! The bay skill: one `SKILL.md` that teaches a coding agent bay's loop, how to read a result,
//! what never to do, and how to talk to a person who has never used Git.
//!
//! The program carries the copy of its own version, so what `bay install` writes always
//! matches the bay that wrote it; [`compare`] is the one judgement of an installed copy, for
//! `bay install` (write only what differs) and `bay doctor` (`SKILL_MISMATCH`).

/// The skill of this bay, as `skills/bay/SKILL.md` holds it.
pub const SKILL: &str = include_str!("../../skills/bay/SKILL.md");

/// Where the skill goes inside a Claude config directory.
pub const SKILL_PATH: &str = "skills/bay/SKILL.md";

/// How an installed copy of the skill stands against this bay's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillState {
    /// The directory holds no skill.
    Missing,
    /// Byte for byte this bay's skill.
    Matches,
    /// Another version's skill, or one edited by hand.
    Differs,
}

/// Judges an installed copy (`None` when absent). Bytes, not text: a copy that differs in its
/// line endings is still not the skill this bay ships, and rewriting it costs nothing.
pub fn compare(installed: Option<&[u8]>) -> SkillState {
    match installed {
        None => SkillState::Missing,
        Some(bytes) if bytes == SKILL.as_bytes() => SkillState::Matches,
        Some(_) => SkillState::Differs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_version_s_bytes_match() {
        assert_eq!(compare(None), SkillState::Missing);
        assert_eq!(compare(Some(SKILL.as_bytes())), SkillState::Matches);
        let crlf = SKILL.replace('\n', "\r\n");
        assert_eq!(compare(Some(crlf.as_bytes())), SkillState::Differs);
        assert_eq!(compare(Some(b"")), SkillState::Differs);
    }

    #[test]
    fn the_skill_names_itself_and_covers_its_four_parts() {
        assert!(SKILL.starts_with("---\nname: bay\ndescription: "));
        for part in [
            "## The loop",
            "## Reading the result",
            "## Never do these",
            "## When the person is not a developer",
        ] {
            assert!(SKILL.contains(part), "{part}");
        }
        for word in crate::words::WORDS {
            assert!(SKILL.contains(word.never) && SKILL.contains(word.instead));
        }
    }
}
