//! The idempotency rule for adds, in one place for every front end (REST, MCP, the engine's own
//! callers): a turn key names one turn, so sending it again with the same text is a harmless
//! retry (a duplicate, nothing written) but with other text is a mistake (a reused request key, a
//! key scheme that collides), refused as a conflict instead of silently keeping the first text.
//! A request key (REST's `Idempotency-Key`, MCP's `key`) gives the turns without a key of their
//! own `idem:<key>#<index>`, and a retry must resend the same number of turns.

use mnemos_core::{Turn, UserKey};

use crate::error::KeyConflict;
use crate::memories::NewTurn;
use crate::{AddReport, Engine, EngineResult};

/// The longest request key accepted (bytes).
pub const MAX_REQUEST_KEY_LEN: usize = 200;

/// The key of a request's `index`-th turn under the request key `key`.
pub fn request_turn_key(key: &str, index: usize) -> String {
    format!("idem:{key}#{index}")
}

impl Engine {
    /// Commit turns, as [`Engine::commit_turns`], once they pass the idempotency rule: a turn
    /// whose key is already stored with another text is a [`KeyConflict`] and nothing is
    /// written; with the same text it is reported as a duplicate.
    pub fn add(&self, turns: Vec<NewTurn>) -> EngineResult<AddReport> {
        self.add_request(turns, None)
    }

    /// [`Engine::add`] for one request under an optional request key: turns without a key get
    /// [`request_turn_key`], and a request key already used for a request with another number
    /// of turns is a [`KeyConflict`] too.
    pub fn add_request(
        &self,
        mut turns: Vec<NewTurn>,
        request_key: Option<&str>,
    ) -> EngineResult<AddReport> {
        if let Some(key) = request_key {
            for (i, turn) in turns.iter_mut().enumerate() {
                if turn.key.is_none() {
                    turn.key = Some(request_turn_key(key, i));
                }
            }
        }
        self.check_keys(&turns, request_key)?;
        self.commit_turns(turns)
    }

    /// The rule, per user with keyed turns (one store read each). The request key's count check
    /// is for the request's user, its first turn's.
    fn check_keys(&self, turns: &[NewTurn], request_key: Option<&str>) -> EngineResult<()> {
        let requester = request_key.and_then(|key| Some((key, turns.first()?.scope.user_key())));
        let mut users: Vec<UserKey> = requester.iter().map(|(_, u)| u.clone()).collect();
        for turn in turns.iter().filter(|t| t.key.is_some()) {
            let user = turn.scope.user_key();
            if !users.contains(&user) {
                users.push(user);
            }
        }
        for user in users {
            let mine: Vec<&NewTurn> = turns
                .iter()
                .filter(|t| t.key.is_some() && t.scope.user_key() == user)
                .collect();
            let mut keys: Vec<String> = mine.iter().filter_map(|t| t.key.clone()).collect();
            // One key past the request's turns: a stored one means an earlier, longer request.
            let request = requester
                .as_ref()
                .filter(|(_, u)| *u == user)
                .map(|(key, _)| (*key, request_turn_key(key, turns.len())));
            keys.extend(request.as_ref().map(|(_, past_end)| past_end.clone()));
            if keys.is_empty() {
                continue;
            }
            let stored: Vec<Turn> = self.reader().store().turns_by_keys(&user, &keys)?;
            for turn in mine {
                let Some(key) = &turn.key else { continue };
                if stored
                    .iter()
                    .any(|s| s.key.as_ref() == Some(key) && s.text != turn.text)
                {
                    return Err(KeyConflict::OtherText { key: key.clone() }.into());
                }
            }
            // A request's turns commit together, so a retry finds all of them or none.
            if let Some((key, past_end)) = request {
                let found = stored.len();
                let longer = stored.iter().any(|s| s.key.as_deref() == Some(&past_end));
                if found > 0 && (longer || found < turns.len()) {
                    return Err(KeyConflict::OtherCount {
                        key: key.to_string(),
                    }
                    .into());
                }
            }
        }
        Ok(())
    }
}
