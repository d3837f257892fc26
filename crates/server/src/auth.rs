//! Who is calling: every `/v1` request carries `Authorization: Bearer <key>` once keys exist,
//! and acts inside its key's tenant. A tenant is the isolation boundary: handlers build every
//! `UserKey` from the caller's [`Tenant`], never from the request, so no id a request sends can
//! reach another tenant's data.
//!
//! Modes: keys are required when the server has an admin key, when any active key is stored,
//! or when it listens beyond loopback. Otherwise (a fresh local install) requests without a
//! key act in the configured default tenant. A key made while the server runs switches it to
//! "required" within [`REFRESH`]; a revoked key stops working within the same bound.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use mnemos_core::{ApiKey, UserKey};
use mnemos_engine::{hash_api_key, Engine};

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// How long a key lookup (and "do any keys exist") is trusted before the store is asked again.
pub const REFRESH: Duration = Duration::from_secs(2);
/// Cached key lookups kept at most (the cache is cleared when full).
const CACHE_LIMIT: usize = 10_000;

/// Who a request comes from, put in the request's extensions by [`authenticate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A tenant's key (or no key, in open mode, as the default tenant).
    Tenant(String),
    /// The admin key: manages keys, reads no tenant's data.
    Admin,
}

/// The caller's tenant; extracting it rejects the admin key with 403.
#[derive(Clone, Debug)]
pub struct Tenant(pub String);

impl Tenant {
    /// The caller's user `name` (the only way handlers name a user).
    pub fn user(&self, name: &str) -> Result<UserKey, ApiError> {
        Ok(UserKey::new(self.0.clone(), name.to_string())?)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match parts.extensions.get::<Caller>() {
            Some(Caller::Tenant(tenant)) => Ok(Tenant(tenant.clone())),
            Some(Caller::Admin) => Err(ApiError::new(
                ErrorCode::Forbidden,
                "the admin key manages keys only; use a tenant's key for its data",
            )),
            None => Err(ApiError::new(
                ErrorCode::Internal,
                "request not authenticated",
            )),
        }
    }
}

/// Proof that the caller holds the admin key; extracting it rejects everyone else with 403.
pub struct Admin;

impl<S: Send + Sync> FromRequestParts<S> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match parts.extensions.get::<Caller>() {
            Some(Caller::Admin) => Ok(Admin),
            _ => Err(ApiError::new(
                ErrorCode::Forbidden,
                "managing keys needs the admin key (MNEMOS_ADMIN_KEY); or use `mnemos keys`",
            )),
        }
    }
}

/// The server's key checking: the admin key's hash, the open-mode tenant and lookup caches.
pub struct Auth {
    admin_hash: Option<[u8; 32]>,
    default_tenant: String,
    /// Listening beyond loopback: never serve without a key.
    always_required: bool,
    keys_exist: Mutex<Option<(Instant, bool)>>,
    lookups: Mutex<HashMap<String, (Instant, ApiKey)>>,
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

impl Auth {
    pub fn new(admin_key: Option<&str>, default_tenant: String, always_required: bool) -> Self {
        Auth {
            admin_hash: admin_key.map(sha256),
            default_tenant,
            always_required,
            keys_exist: Mutex::new(None),
            lookups: Mutex::new(HashMap::new()),
        }
    }

    /// Drop every cached lookup: after a revocation through this server, its key stops working
    /// at once (revocations by other processes take up to [`REFRESH`]).
    pub fn forget_cached(&self) {
        self.lookups.lock().clear();
        *self.keys_exist.lock() = None;
    }

    /// "Are keys required?" from the cache alone, if it is fresh.
    fn keys_required_cached(&self) -> Option<bool> {
        if self.always_required || self.admin_hash.is_some() {
            return Some(true);
        }
        let cached = *self.keys_exist.lock();
        cached.and_then(|(at, exist)| (at.elapsed() < REFRESH).then_some(exist))
    }

    /// Whether a request without a key is refused (store errors count as "required": failing
    /// closed never serves data to an unauthenticated caller).
    fn keys_required(&self, engine: &Engine) -> bool {
        if let Some(required) = self.keys_required_cached() {
            return required;
        }
        let exist = engine
            .api_keys(None)
            .map_or(true, |keys| keys.iter().any(ApiKey::is_active));
        *self.keys_exist.lock() = Some((Instant::now(), exist));
        exist
    }

    /// The caller a secret stands for, from the admin key or the cache alone.
    fn caller_cached(&self, secret: &str) -> Option<Caller> {
        // Comparing digests, not secrets, keeps the comparison's timing independent of how
        // much of the secret a guess got right.
        if self.admin_hash.is_some_and(|admin| admin == sha256(secret)) {
            return Some(Caller::Admin);
        }
        let lookups = self.lookups.lock();
        let (at, key) = lookups.get(&hash_api_key(secret))?;
        (at.elapsed() < REFRESH).then(|| Caller::Tenant(key.tenant.clone()))
    }

    /// The caller a presented secret stands for; `None` when it is unknown or revoked.
    fn caller_of(&self, engine: &Engine, secret: &str) -> Result<Option<Caller>, ApiError> {
        if let Some(caller) = self.caller_cached(secret) {
            return Ok(Some(caller));
        }
        let hash = hash_api_key(secret);
        let Some(key) = engine.authenticate(secret)? else {
            self.lookups.lock().remove(&hash);
            return Ok(None);
        };
        let mut lookups = self.lookups.lock();
        if lookups.len() >= CACHE_LIMIT {
            lookups.clear();
        }
        lookups.insert(hash, (Instant::now(), key.clone()));
        Ok(Some(Caller::Tenant(key.tenant)))
    }

    /// The caller of a request with these headers when the caches can tell (no store access,
    /// so the async side answers without a trip to the blocking pool); `None` otherwise.
    pub fn identify_cached(&self, headers: &HeaderMap) -> Option<Result<Caller, ApiError>> {
        match bearer(headers) {
            Err(error) => Some(Err(error)),
            Ok(Some(secret)) => self.caller_cached(secret).map(Ok),
            Ok(None) => self
                .keys_required_cached()
                .map(|required| self.keyless(required)),
        }
    }

    /// The caller of a request with these headers, or why it is refused.
    pub fn identify(&self, engine: &Engine, headers: &HeaderMap) -> Result<Caller, ApiError> {
        match bearer(headers)? {
            Some(secret) => self.caller_of(engine, secret)?.ok_or_else(|| {
                ApiError::new(ErrorCode::Unauthorized, "the API key is unknown or revoked")
            }),
            None => self.keyless(self.keys_required(engine)),
        }
    }

    fn keyless(&self, required: bool) -> Result<Caller, ApiError> {
        if required {
            Err(ApiError::new(
                ErrorCode::Unauthorized,
                "an API key is required: send 'Authorization: Bearer <key>' (`mnemos keys create`)",
            ))
        } else {
            Ok(Caller::Tenant(self.default_tenant.clone()))
        }
    }
}

/// A digest of the bearer secret a request presents (none: no key, or a malformed header), to
/// tell whether two requests came with the same key without keeping the key itself.
pub(crate) fn key_digest(headers: &HeaderMap) -> Option<[u8; 32]> {
    bearer(headers).ok().flatten().map(sha256)
}

/// The secret of an `Authorization: Bearer <secret>` header, if there is one.
fn bearer(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let malformed = || {
        ApiError::new(
            ErrorCode::Unauthorized,
            "the Authorization header must be 'Bearer <key>'",
        )
    };
    let text = value.to_str().map_err(|_| malformed())?;
    let (scheme, secret) = text.split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") || secret.trim().is_empty() {
        return Err(malformed());
    }
    Ok(Some(secret.trim()))
}

/// Middleware on `/v1`: identify the caller (on the blocking pool: it may read the store) and
/// hand it to the handlers, or answer 401.
pub async fn authenticate(
    State(app): State<Arc<AppState>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let identified = match app.auth.identify_cached(request.headers()) {
        Some(known) => known,
        None => {
            let headers = request.headers().clone();
            tokio::task::spawn_blocking(move || app.auth.identify(&app.engine, &headers))
                .await
                .map_err(|e| ApiError::new(ErrorCode::Internal, format!("auth task failed: {e}")))
                .and_then(|caller| caller)
        }
    };
    match identified {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(error) => error.into_response(),
    }
}
