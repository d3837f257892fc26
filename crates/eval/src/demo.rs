//! The bundled sample `mnemos demo` ingests: a short English and a short Chinese conversation
//! (JSONL turns, read like any turn file) and the questions the demo asks of them. Kept with the
//! other datasets and their readers, so the binary only ingests, asks and prints.

use std::io::Cursor;

use crate::error::DatasetError;
use crate::jsonl::read_turn_lines;
use crate::source::{jsonl_turns, TurnDefaults, TurnSource};

const SAMPLE: &str = include_str!("../data/demo_dialogue.jsonl");

/// The demo's questions, each with the user it is asked for.
pub const QUERIES: [(&str, &str); 9] = [
    (
        "lena",
        "When is my sister visiting, and what can't she eat?",
    ),
    ("lena", "What is my cat called?"),
    ("lena", "How is my half marathon training going?"),
    ("lena", "What helps me with seasickness on the boat?"),
    // She moved from Lisbon to Porto: only the current city is current.
    ("lena", "Which city do I live in now?"),
    // She asked to forget it: what is left is that she asked.
    ("lena", "What is my passport number?"),
    ("wei", "我女朋友是做什么工作的？"),
    ("wei", "医生让我注意什么？"),
    ("wei", "我现在做什么工作？"),
];

/// The users the sample talks with.
pub const USERS: [&str; 2] = ["lena", "wei"];

/// The agent the sample's turns are written for.
pub const AGENT: &str = "demo";

/// The sample's turns in `tenant`, for the demo's agent.
pub fn sample_turns(tenant: &str) -> Result<TurnSource, DatasetError> {
    let defaults = TurnDefaults {
        tenant: tenant.to_string(),
        user: "default".into(),
        agent: AGENT.into(),
        session: "default".into(),
    };
    let read = read_turn_lines(Cursor::new(SAMPLE.as_bytes()), true)?;
    Ok(jsonl_turns(read, &defaults))
}
