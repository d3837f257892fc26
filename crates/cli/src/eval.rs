//! `mnemos eval …`: the evaluation commands. Their flags and the settings they make are the
//! evaluation library's (`mnemos_eval::cli`); this runs one, prints the report it returns, and
//! shows its progress on stderr.

use std::cell::RefCell;

use anyhow::Result;
use indicatif::ProgressBar;

use mnemos_eval::cli::EvalCommand;
use mnemos_eval::experiment::{Progress, ProgressFn};
use mnemos_eval::EvalError;
use mnemos_setup::Config;

use crate::GlobalArgs;

pub fn run(global: &GlobalArgs, command: EvalCommand) -> Result<()> {
    if let Some(problem) = command.usage_problem() {
        anyhow::bail!(problem);
    }
    let config = if command.needs_config() {
        global.config()?
    } else {
        Config::default()
    };
    print_report(|progress| mnemos_eval::cli::run(&config, command, progress))
}

/// Run an evaluation library call with its progress on the terminal and print what it returns.
pub fn print_report(call: impl FnOnce(ProgressFn<'_>) -> Result<String, EvalError>) -> Result<()> {
    let bars = Bars::default();
    let printed = call(&|event| bars.show(event));
    print!("{}", printed?);
    Ok(())
}

/// The library's progress on the terminal: a bar per stage, notes as lines on stderr.
#[derive(Default)]
struct Bars(RefCell<Option<ProgressBar>>);

impl Bars {
    fn show(&self, event: Progress<'_>) {
        match event {
            Progress::Stage { name, total } => {
                *self.0.borrow_mut() = Some(crate::progress::bar(total, name));
            }
            Progress::Step(n) => {
                if let Some(bar) = self.0.borrow().as_ref() {
                    bar.inc(n);
                }
            }
            Progress::StageDone => {
                if let Some(bar) = self.0.borrow_mut().take() {
                    bar.finish_and_clear();
                }
            }
            Progress::Note(text) => match self.0.borrow().as_ref() {
                Some(bar) => bar.suspend(|| eprintln!("{text}")),
                None => eprintln!("{text}"),
            },
        }
    }
}
