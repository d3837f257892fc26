//! API keys: made, listed, revoked and checked through the engine (the only write path).
//!
//! A key's secret is `mnk_` followed by 64 hex digits (32 bytes from the operating system's
//! random source). It is shown once, when made; the store keeps only its SHA-256, so checking
//! a presented key is one hash and one indexed lookup.

use sha2::{Digest, Sha256};

use mnemos_core::{ApiKey, ApiKeyId, Error as CoreError};

use crate::engine::Engine;
use crate::error::{EngineError, EngineResult};

/// What every secret starts with, so a leaked one is recognizable (e.g. by secret scanners).
pub const API_KEY_PREFIX: &str = "mnk_";
/// Characters of the secret kept (after the prefix) to tell keys apart in listings.
const SHOWN_CHARS: usize = 8;

/// A freshly made key: the stored record and the secret, which nothing can show again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewApiKey {
    pub key: ApiKey,
    pub secret: String,
}

/// Lower-case hex SHA-256 of a presented secret, as [`ApiKey::hash`] stores it.
pub fn hash_api_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn new_secret() -> EngineResult<String> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| EngineError::Setup {
        what: "reading the system's random source for a new API key".into(),
        source: Box::new(e),
        class: mnemos_core::ErrorClass::Unavailable,
    })?;
    Ok(format!("{API_KEY_PREFIX}{}", hex::encode(bytes)))
}

impl Engine {
    /// Make a key for `tenant`, labelled `name`. The secret is in the answer and nowhere else.
    pub fn create_api_key(&self, tenant: &str, name: &str) -> EngineResult<NewApiKey> {
        let secret = new_secret()?;
        let shown = API_KEY_PREFIX.len() + SHOWN_CHARS;
        let key = ApiKey {
            id: ApiKeyId::new(),
            tenant: tenant.to_string(),
            name: name.to_string(),
            hash: hash_api_key(&secret),
            prefix: secret.chars().take(shown).collect(),
            created_at: self.memories.wall_time(),
            revoked_at: None,
        };
        key.validate()?;
        self.memories.store().put_api_key(&key)?;
        Ok(NewApiKey { key, secret })
    }

    /// Every key (of one tenant when given), revoked ones included, oldest first.
    pub fn api_keys(&self, tenant: Option<&str>) -> EngineResult<Vec<ApiKey>> {
        let mut keys = self.memories.store().api_keys()?;
        keys.retain(|k| tenant.is_none_or(|t| k.tenant == t));
        Ok(keys)
    }

    /// Revoke a key: requests with it fail from now on. Revoking twice keeps the first time.
    /// Unknown ids are `NotFound`.
    pub fn revoke_api_key(&self, id: ApiKeyId) -> EngineResult<ApiKey> {
        let at = self.memories.wall_time();
        self.memories
            .store()
            .revoke_api_key(id, at)?
            .ok_or_else(|| CoreError::not_found("API key", id).into())
    }

    /// The active key a presented secret belongs to, if any. Unknown and revoked secrets are
    /// both `None`: a caller learns nothing about which keys exist.
    pub fn authenticate(&self, secret: &str) -> EngineResult<Option<ApiKey>> {
        if !secret.starts_with(API_KEY_PREFIX) {
            return Ok(None);
        }
        let found = self
            .memories
            .store()
            .api_key_by_hash(&hash_api_key(secret))?;
        Ok(found.filter(ApiKey::is_active))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_hex() {
        assert_eq!(
            hash_api_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn secrets_are_prefixed_random_and_distinct() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert!(a.starts_with(API_KEY_PREFIX));
        assert_eq!(a.len(), API_KEY_PREFIX.len() + 64);
        assert_ne!(a, b);
    }
}
