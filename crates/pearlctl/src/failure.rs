//! Why pearlctl stopped, as an exit code a script can trust and a message that says what to fix.

use std::process::ExitCode;

/// 1: pearld could not be reached, or refused the request.
pub const DAEMON: u8 = 1;
/// 2: the command line is wrong.
pub const USAGE: u8 = 2;
/// 3: what was asked for does not exist.
pub const NOT_FOUND: u8 = 3;

#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    /// The field pearld named, when it refused.
    pub field: Option<String>,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into(), field: None }
    }

    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(USAGE, message)
    }

    pub fn report(&self, usage: &str) -> ExitCode {
        if self.code == USAGE {
            eprintln!("pearlctl: {}\n\n{usage}\n\nFor more information, try '--help'.", self.message);
        } else {
            eprintln!("pearlctl: {}", self.message);
        }
        ExitCode::from(self.code)
    }
}
