//! `hookctl completions` and `hookctl man`, generated from the clap
//! definitions, so they list exactly the commands and flags this binary has.

use std::io::{self, Write};

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionShell};

/// Writes the completion script for `shell` to stdout.
pub fn completions(shell: CompletionShell) -> anyhow::Result<()> {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut command = Cli::command();
    let mut stdout = io::stdout().lock();
    clap_complete::generate(shell, &mut command, "hookctl", &mut stdout);
    stdout.flush()?;
    Ok(())
}

/// Writes the manual page, roff, to stdout.
pub fn man() -> anyhow::Result<()> {
    let mut stdout = io::stdout().lock();
    clap_mangen::Man::new(Cli::command()).render(&mut stdout)?;
    stdout.flush()?;
    Ok(())
}
