//! The notify plugin: after each push that appends an event to this runner's log, the runner
//! hands that event (`bay.event/1`) to `[plugin.notify] command` on stdin, with the program
//! from main's tip (the config it read there for holds names the plugin). Exit 0 is delivered;
//! anything else, or no exit within `timeout_s`, is lost. A notice is never sent again: the log
//! keeps the event, and `bay status --since` lists it.

use super::{Purpose, Runner};
use crate::event::BayEvent;
use crate::machine::Action;
use crate::plugin::notify_call;

impl Runner {
    /// Hands the event the accepted push appended (its log message) to the notify plugin,
    /// when main's config names one.
    pub(super) fn notify(&mut self, message: Option<String>) {
        let Some(message) = message else {
            return;
        };
        let Some((main, Ok(config))) = &self.holds else {
            return;
        };
        let Some(plugin) = config.notify_plugin.as_ref() else {
            return;
        };
        let Ok(event) = BayEvent::from_message(&message) else {
            return;
        };
        let Ok(json) = serde_json::to_string(&event) else {
            return;
        };
        let run = Action::RunPlugin(notify_call(plugin, main, &json));
        self.out.send(run, Purpose::Notify);
    }
}
