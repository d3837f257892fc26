//! `mnemos keys`: the API keys a server checks. Each key acts in one tenant; only its hash is
//! stored, so the secret is printed once, when it is made.

use anyhow::Result;
use clap::{Args, Subcommand};

use mnemos_core::ApiKeyId;
use mnemos_render as render;
use mnemos_setup::OpenOptions;

use crate::memory::existing_engine;
use crate::output;
use crate::usage::usage;
use crate::GlobalArgs;

#[derive(Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    command: KeysCommand,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Make a key for the tenant given with --tenant (required) and print its secret (shown
    /// this once).
    Create {
        /// A label for people ("support bot").
        #[arg(long, default_value = "key")]
        name: String,
    },
    /// List keys (never their secrets), revoked ones included; with --tenant, only that
    /// tenant's.
    List,
    /// Revoke a key: requests with it are refused (by a running server within 2 s).
    Revoke {
        /// The key's id (from `mnemos keys list`).
        id: ApiKeyId,
    },
}

pub fn run(global: &GlobalArgs, args: KeysArgs) -> Result<()> {
    let config = &global.config()?;
    match args.command {
        KeysCommand::Create { name } => {
            let Some(tenant) = global.tenant() else {
                usage!("name the key's tenant: mnemos keys create --tenant T");
            };
            // Keys may come before any data (a server beyond loopback needs one to start), so
            // this makes the database when there is none.
            let options = OpenOptions {
                create: true,
                load_embedder: false,
                preset: None,
            };
            let made = mnemos_setup::open(config, &options)?.create_api_key(tenant, &name)?;
            if args.json {
                let shown = serde_json::json!({
                    "id": made.key.id.to_string(),
                    "tenant": made.key.tenant,
                    "name": made.key.name,
                    "secret": made.secret,
                });
                println!("{}", serde_json::to_string_pretty(&shown)?);
            } else {
                eprintln!(
                    "key {} for tenant {}: the secret below is shown only now; store it safely",
                    made.key.id, made.key.tenant
                );
                println!("{}", made.secret);
            }
        }
        KeysCommand::List => {
            let keys = existing_engine(config, false, None)?.api_keys(global.tenant())?;
            output::emit(args.json, &keys, || render::api_keys(&keys))?;
        }
        KeysCommand::Revoke { id } => {
            let key = existing_engine(config, false, None)?.revoke_api_key(id)?;
            output::emit(args.json, &key, || {
                render::api_keys(std::slice::from_ref(&key))
            })?;
        }
    }
    Ok(())
}
