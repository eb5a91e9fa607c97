//! The `report` binary's progress: a bar on standard error with the steps done (one per
//! measured row, and setup that takes a while) and the one running, named after its row; or
//! one line per step where standard error is not a terminal.

use indicatif::{ProgressBar, ProgressStyle};

/// Steps done out of the steps expected, and the one running.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    /// Print a line per step (standard error is not a terminal, so the bar is not drawn).
    lines: bool,
}

impl Progress {
    /// A bar for `steps` steps (more can be added with [`Progress::add_steps`]).
    pub fn new(steps: u64) -> Self {
        let bar = ProgressBar::new(steps);
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len}: {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        let lines = bar.is_hidden();
        Self { bar, lines }
    }

    /// A progress that shows nothing (for tests and library callers).
    pub fn hidden() -> Self {
        Self {
            bar: ProgressBar::hidden(),
            lines: false,
        }
    }

    /// Expects `steps` more steps.
    pub fn add_steps(&self, steps: u64) {
        self.bar.inc_length(steps);
    }

    /// Starts the next step, named after its row: the one running before it is done.
    pub fn step(&self, primitive: &str, backend: &str) {
        if !self.bar.message().is_empty() {
            self.bar.inc(1);
        }
        let message = format!("{primitive}, {backend}");
        if self.lines {
            eprintln!("running {message} ...");
        }
        self.bar.set_message(message);
    }

    /// The last step is done: clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    /// Clears the bar, also when a step failed.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
