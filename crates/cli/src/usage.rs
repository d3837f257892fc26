//! Which failures are the user's (exit 2) and which the service's (exit 1), and how an error
//! and its causes are printed.

use mnemos_core::{ErrorClass, StoreError};
use mnemos_engine::EngineError;
use mnemos_eval::{DatasetError, EvalError};

/// A mistake in how the command was called: a flag, a value, a missing file or user.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Fail with a usage error.
macro_rules! usage {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::usage::UsageError(format!($($arg)*))))
    };
}
pub(crate) use usage;

/// The error and each cause once, `outer: cause: root`.
pub fn report(err: &anyhow::Error) -> String {
    mnemos_core::error::report(err.as_ref())
}

fn class_code(class: ErrorClass) -> u8 {
    if class.is_user_error() {
        2
    } else {
        1
    }
}

/// 2 when the first typed error in the chain is the caller's fault, else 1.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<UsageError>() || cause.is::<DatasetError>() || cause.is::<clap::Error>() {
            return 2;
        }
        // The evaluation's own input errors (bad options, datasets) carry no typed cause.
        if cause
            .downcast_ref::<EvalError>()
            .is_some_and(|e| e.class().is_user_error())
        {
            return 2;
        }
        if let Some(e) = cause.downcast_ref::<EngineError>() {
            return class_code(e.class());
        }
        if let Some(e) = cause.downcast_ref::<mnemos_setup::MigrationError>() {
            return class_code(e.class());
        }
        if let Some(e) = cause.downcast_ref::<mnemos_server::ServerError>() {
            return class_code(e.class());
        }
        if let Some(e) = cause.downcast_ref::<mnemos_core::Error>() {
            return class_code(e.class());
        }
        if let Some(e) = cause.downcast_ref::<StoreError>() {
            return class_code(e.class());
        }
        if let Some(e) = cause.downcast_ref::<mnemos_core::ModelError>() {
            return class_code(e.class());
        }
        if let Some(e) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            return match e.kind() {
                NotFound | PermissionDenied | InvalidInput | InvalidData | AlreadyExists => 2,
                _ => 1,
            };
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_errors_exit_2_and_service_errors_exit_1() {
        let usage = anyhow::Error::new(UsageError("bad flag".into()));
        assert_eq!(exit_code(&usage), 2);
        let unknown = anyhow::Error::new(EngineError::from(mnemos_core::Error::not_found(
            "memory", "x",
        )));
        assert_eq!(exit_code(&unknown), 2);
        let disk = anyhow::Error::new(EngineError::from(StoreError::backend_message(
            "write",
            "disk full",
        )));
        assert_eq!(exit_code(&disk), 1);
        assert_eq!(exit_code(&anyhow::anyhow!("anything else")), 1);
        let missing = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(exit_code(&missing.context("reading input")), 2);
    }
}
