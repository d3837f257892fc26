// Test code: a failed unwrap or assertion is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

//! `/mcp` with rmcp's own streamable-HTTP client: the six tools, their errors, API keys and
//! tenants, and a graceful stop with sessions still open.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use common::Server;

type Client = RunningService<RoleClient, ()>;

const ADMIN_KEY: &str = "admin-0123456789abcdef0123456789abcdef";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(server: &Server, key: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(server.url("/mcp")).auth_header(key);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    let arguments = arguments.as_object().unwrap().clone();
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A successful call's text and structured content.
async fn ok(client: &Client, tool: &'static str, arguments: Value) -> (String, Value) {
    let result = call(client, tool, arguments).await;
    assert_ne!(result.is_error, Some(true), "{tool}: {}", text(&result));
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    (text(&result), structured)
}

/// A failed call's message.
async fn tool_error(client: &Client, tool: &'static str, arguments: Value) -> String {
    let result = call(client, tool, arguments).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{tool} should fail: {}",
        text(&result)
    );
    text(&result)
}

#[test]
fn the_six_tools_over_streamable_http_act_in_the_keys_tenant() {
    let config = common::Server::default_config();
    let config = mnemos_server::ServerConfig {
        admin_key: Some(ADMIN_KEY.into()),
        ..config
    };
    let (server, keys) = Server::start_keyed(config, "retrieval", true, &["acme", "globex"]);

    // No key: the HTTP layer refuses before MCP sees the request.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let (status, body) = server.send("POST", "/mcp", Some(initialize.clone()));
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "unauthorized");
    let (status, _) = server.send_as(Some("mnk_not_a_key"), "POST", "/mcp", Some(initialize));
    assert_eq!(status, 401);

    let rt = runtime();
    let (acme, globex) = rt.block_on(async {
        let acme = connect(&server, &keys[0]).await;
        let info = acme.peer_info().unwrap();
        assert_eq!(info.server_info.as_ref().unwrap().name, "mnemos");
        assert!(info
            .instructions
            .as_deref()
            .unwrap_or("")
            .contains("recall"));

        let tools = acme.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["forget", "list", "recall", "remember", "search", "show"]
        );
        for tool in &tools {
            let description = tool.description.as_deref().unwrap_or("");
            assert!(description.len() > 60, "{}: {description}", tool.name);
            let schema = Value::Object((*tool.input_schema).clone());
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert!(
                schema["properties"]["user"].is_object(),
                "{}: {schema}",
                tool.name
            );
            assert!(schema["properties"].get("tenant").is_none());
        }

        // remember → search → recall → list → forget → show
        let turns = json!({"user": "lena", "key": "chat-1", "session": "s1", "turns": [
            {"role": "user", "text": "My sister Mia is allergic to peanuts."},
            {"role": "assistant", "text": "Noted: no peanuts when cooking for Mia."},
            {"role": "user", "text": "I work as a nurse in Lyon.", "speaker": "Lena"}]});
        let (said, added) = ok(&acme, "remember", turns.clone()).await;
        assert_eq!(added["added"], 3, "{said}");
        assert!(said.contains("3 turn(s) added"), "{said}");
        let (said, again) = ok(&acme, "remember", turns).await;
        assert_eq!(again["added"], 0, "{said}");
        assert_eq!(again["duplicate"], 3, "{said}");
        let conflict = tool_error(
            &acme,
            "remember",
            json!({"user": "lena", "key": "chat-1", "text": "Something else entirely."}),
        )
        .await;
        assert!(conflict.contains("conflict"), "{conflict}");
        // Fewer turns under the same key: not a retry of that call either.
        let shorter = json!({"user": "lena", "key": "chat-1", "session": "s1", "turns": [
            {"role": "user", "text": "My sister Mia is allergic to peanuts."}]});
        let conflict = tool_error(&acme, "remember", shorter).await;
        assert!(conflict.contains("conflict"), "{conflict}");
        let (said, _) = ok(
            &acme,
            "remember",
            json!({"user": "lena", "text": "I love hiking in the Alps.", "role": "user"}),
        )
        .await;
        assert!(said.contains("1 turn(s) added"), "{said}");
        assert!(
            tool_error(&acme, "remember", json!({"user": "lena", "text": "  "}))
                .await
                .contains("invalid_input")
        );

        let (found, hits) = ok(
            &acme,
            "search",
            json!({"user": "lena", "query": "peanuts allergy", "top_k": 3}),
        )
        .await;
        let first = &hits["hits"][0];
        assert!(
            first["text"].as_str().unwrap().contains("peanuts"),
            "{found}"
        );
        let peanut_id = first["id"].as_str().unwrap().to_string();
        assert!(found.contains(&format!("id {peanut_id}")), "{found}");
        assert!(
            found.contains("matched [") || found.contains("meaning"),
            "{found}"
        );

        let (context, recalled) = ok(
            &acme,
            "recall",
            json!({"user": "lena", "query": "What should I cook for Mia?", "budget": 400}),
        )
        .await;
        assert!(context.contains("peanuts"), "{context}");
        assert!(context.contains("sources:"), "{context}");
        assert!(recalled["tokens"].as_u64().unwrap() <= 400);

        let (page, listed) = ok(&acme, "list", json!({"user": "lena", "limit": 2})).await;
        assert_eq!(listed["memories"].as_array().unwrap().len(), 2, "{page}");
        let cursor = listed["next_cursor"].as_str().unwrap().to_string();
        assert!(page.contains(&format!("next_cursor: {cursor}")), "{page}");
        let (_, rest) = ok(
            &acme,
            "list",
            json!({"user": "lena", "limit": 50, "cursor": cursor}),
        )
        .await;
        assert!(rest["next_cursor"].is_null());
        let total = listed["total"].as_u64().unwrap();
        assert!(total >= 4, "{page}");
        let (_, turns_only) = ok(&acme, "list", json!({"user": "lena", "kind": "turn"})).await;
        assert_eq!(turns_only["total"], 4);

        let (forgot, report) = ok(
            &acme,
            "forget",
            json!({"user": "lena", "id": peanut_id,
            "reason": "the user asked to forget it"}),
        )
        .await;
        assert!(forgot.starts_with("Forgot memory"), "{forgot}");
        assert_eq!(report["already_forgotten"], false);
        let (again, report) = ok(
            &acme,
            "forget",
            json!({"user": "lena", "id": peanut_id,
            "reason": "again"}),
        )
        .await;
        assert!(again.contains("already forgotten"), "{again}");
        assert_eq!(report["already_forgotten"], true);
        let (_, hits) = ok(
            &acme,
            "search",
            json!({"user": "lena", "query": "peanuts allergy"}),
        )
        .await;
        assert!(hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["id"] != peanut_id.as_str()));

        let (persona, _) = ok(&acme, "show", json!({"user": "lena", "view": "persona"})).await;
        assert!(!persona.trim().is_empty());
        let (timeline, shown) =
            ok(&acme, "show", json!({"user": "lena", "view": "timeline"})).await;
        assert_eq!(shown["view"], "timeline", "{timeline}");

        // A caller's mistakes are tool errors, and the session goes on.
        let unknown = "0190f0e0-0000-7000-8000-000000000000";
        let message = tool_error(
            &acme,
            "forget",
            json!({"user": "lena", "id": unknown, "reason": "wrong"}),
        )
        .await;
        assert!(message.contains("not_found"), "{message}");
        let message = tool_error(
            &acme,
            "forget",
            json!({"user": "lena", "id": "not-an-id", "reason": "wrong"}),
        )
        .await;
        assert!(message.contains("no memory 'not-an-id'"), "{message}");
        let message = tool_error(&acme, "list", json!({"user": "nobody"})).await;
        assert!(message.contains("no user 'nobody'"), "{message}");
        let message = tool_error(&acme, "list", json!({"user": "lena", "cursor": "zz"})).await;
        assert!(message.contains("cursor"), "{message}");
        let (empty, _) = ok(
            &acme,
            "recall",
            json!({"user": "nobody", "query": "anything"}),
        )
        .await;
        assert!(empty.contains("nothing remembered"), "{empty}");
        // No argument names a tenant.
        let refused = acme
            .call_tool(
                CallToolRequestParams::new("list").with_arguments(
                    json!({"user": "lena", "tenant": "globex"})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
            )
            .await;
        assert!(refused.is_err() || refused.unwrap().is_error == Some(true));

        // Another tenant's key sees none of it, with the same user name.
        let globex = connect(&server, &keys[1]).await;
        let (_, hits) = ok(
            &globex,
            "search",
            json!({"user": "lena", "query": "peanuts nurse Lyon"}),
        )
        .await;
        assert_eq!(hits["hits"].as_array().unwrap().len(), 0);
        assert!(tool_error(&globex, "list", json!({"user": "lena"}))
            .await
            .contains("not_found"));
        ok(
            &globex,
            "remember",
            json!({"user": "lena", "text": "I live in Osaka."}),
        )
        .await;
        let (_, theirs) = ok(&globex, "list", json!({"user": "lena"})).await;
        assert_eq!(theirs["total"], 1);
        assert!(theirs["memories"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Osaka"));
        let (_, ours) = ok(&acme, "search", json!({"user": "lena", "query": "Osaka"})).await;
        assert!(ours["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| !h["text"].as_str().unwrap().contains("Osaka")));
        let other = tool_error(
            &globex,
            "forget",
            json!({"user": "lena", "id": hits_id(&acme).await,
            "reason": "not mine"}),
        )
        .await;
        assert!(other.contains("not_found"), "{other}");

        // The admin key manages keys; it reads no tenant's memories.
        let admin = connect(&server, ADMIN_KEY).await;
        let refused = tool_error(&admin, "list", json!({"user": "lena"})).await;
        assert!(refused.contains("forbidden"), "{refused}");
        admin.cancel().await.unwrap();
        (acme, globex)
    });

    // Stopping the server with MCP sessions still open finishes promptly.
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || done_tx.send(server.stop()).unwrap());
    let stopped = done_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the server did not stop with MCP sessions open");
    stopped.unwrap();
    drop((acme, globex));
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// The id of one of acme's memories (for another tenant to try).
async fn hits_id(client: &Client) -> String {
    let (_, listed) = ok(client, "list", json!({"user": "lena", "limit": 1})).await;
    listed["memories"][0]["id"].as_str().unwrap().to_string()
}

#[test]
fn the_tools_say_what_is_true_now_and_honour_a_forget_request() {
    let (server, keys) =
        Server::start_keyed(common::Server::default_config(), "default", true, &["acme"]);
    let rt = runtime();
    rt.block_on(async {
        let client = connect(&server, &keys[0]).await;
        let remember = |text: &'static str| json!({"user": "ann", "text": text});
        ok(&client, "remember", remember("I live in Tallinn.")).await;
        let (said, structured) = ok(
            &client,
            "remember",
            remember("I just moved, I live in Porto now."),
        )
        .await;
        assert!(said.contains("superseded by"), "{said}");
        assert!(structured["changes"]
            .as_array()
            .is_some_and(|c| !c.is_empty()));

        let (now, hits) = ok(
            &client,
            "search",
            json!({"user": "ann", "query": "Where do I live?"}),
        )
        .await;
        assert!(now.contains("Porto") && !now.contains("Tallinn"), "{now}");
        assert!(now.contains("relevance 0."), "{now}");
        assert!(hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["superseded"] == false && h["relevance"].as_f64().is_some()));
        // A question about nothing the user said finds nothing; a floor outside [0, 1] is
        // refused naming it.
        let (unrelated, none) = ok(
            &client,
            "search",
            json!({"user": "ann", "query": "quantum chromodynamics research papers"}),
        )
        .await;
        assert_eq!(none["hits"], json!([]), "{unrelated}");
        let (context, _) = ok(
            &client,
            "recall",
            json!({"user": "ann", "query": "quantum chromodynamics research papers"}),
        )
        .await;
        assert!(context.contains("nothing remembered"), "{context}");
        let error = tool_error(
            &client,
            "search",
            json!({"user": "ann", "query": "Porto", "min_relevance": 2.0}),
        )
        .await;
        assert!(error.contains("min_relevance"), "{error}");
        let (all, hits) = ok(
            &client,
            "search",
            json!({"user": "ann", "query": "Where do I live?", "include_superseded": true}),
        )
        .await;
        assert!(all.contains("superseded (until"), "{all}");
        assert!(hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["superseded"] == true));
        let (before, _) = ok(
            &client,
            "search",
            json!({"user": "ann", "query": "Where do I live?", "as_of": "2000-01-01"}),
        )
        .await;
        assert!(before.contains("no memories"), "{before}");
        let error = tool_error(
            &client,
            "recall",
            json!({"user": "ann", "query": "x", "as_of": "last week"}),
        )
        .await;
        assert!(error.contains("as_of"), "{error}");

        ok(
            &client,
            "remember",
            remember("My passport number is X4417902."),
        )
        .await;
        ok(
            &client,
            "remember",
            remember("Please forget my passport number."),
        )
        .await;
        let (found, _) = ok(
            &client,
            "search",
            json!({"user": "ann", "query": "passport number"}),
        )
        .await;
        assert!(!found.contains("X4417902"), "{found}");
        let (context, _) = ok(
            &client,
            "recall",
            json!({"user": "ann", "query": "What is my passport number?"}),
        )
        .await;
        assert!(!context.contains("X4417902"), "{context}");
        assert!(context.contains("the user asked to forget"), "{context}");

        // Forgetting by description: a list first, nothing written; then, confirmed with the
        // listed ids, those go.
        let describe = |confirm: Option<Vec<String>>| {
            let mut args = json!({"user": "ann", "query": "my old address",
                "reason": "the user asked to forget it"});
            if let Some(ids) = confirm {
                args["confirm"] = json!(true);
                args["ids"] = json!(ids);
            }
            args
        };
        let (listed, shown) = ok(&client, "forget", describe(None)).await;
        assert!(listed.starts_with("Would forget 2 memory(ies)"), "{listed}");
        assert!(
            listed.contains("Porto") && listed.contains("Tallinn"),
            "{listed}"
        );
        assert!(listed.contains("call again with confirm: true"), "{listed}");
        assert_eq!(shown["confirmed"], false);
        let ids: Vec<String> = shown["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect();
        let (still, _) = ok(
            &client,
            "search",
            json!({"user": "ann", "query": "Where do I live?"}),
        )
        .await;
        assert!(
            still.contains("Porto"),
            "a dry run forgets nothing: {still}"
        );
        let (forgot, done) = ok(&client, "forget", describe(Some(ids.clone()))).await;
        assert!(forgot.starts_with("Forgot 2 memory(ies)"), "{forgot}");
        assert_eq!(done["confirmed"], true);
        let (gone, _) = ok(
            &client,
            "search",
            json!({"user": "ann", "query": "Where do I live?", "include_superseded": true}),
        )
        .await;
        assert!(
            !gone.contains("Porto") && !gone.contains("Tallinn"),
            "{gone}"
        );
        let (none, _) = ok(&client, "forget", describe(None)).await;
        assert!(none.contains("nothing forgotten"), "{none}");

        // Mistakes are tool errors with their code.
        let both = json!({"user": "ann", "id": ids[0], "query": "my address", "reason": "r"});
        let error = tool_error(&client, "forget", both).await;
        assert!(error.starts_with("error (invalid_input):"), "{error}");
        let neither = tool_error(&client, "forget", json!({"user": "ann", "reason": "r"})).await;
        assert!(neither.contains("`query`"), "{neither}");
        let preview_by_id = json!({"user": "ann", "id": ids[0], "confirm": false, "reason": "r"});
        let error = tool_error(&client, "forget", preview_by_id).await;
        assert!(error.contains("go with `query`"), "{error}");
        let empty = json!({"user": "ann", "query": " ", "reason": "r"});
        let error = tool_error(&client, "forget", empty).await;
        assert!(error.contains("query"), "{error}");
    });
}

/// `/mcp` as a plain HTTP client sees it: a JSON-RPC message posted with `headers`.
fn post_raw(
    server: &Server,
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> reqwest::blocking::Response {
    let mut request = server
        .client
        .post(server.url("/mcp"))
        .body(body.to_string());
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().unwrap()
}

const JSON: (&str, &str) = ("content-type", "application/json");
const SDK_ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

/// A plain JSON-RPC call (`Content-Type: application/json`, nothing else): the answer's JSON.
fn rpc(server: &Server, key: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let response = post_raw(server, Some(key), &[JSON], &body.to_string());
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("mcp-session-id").is_none());
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let answer: Value = response.json().unwrap();
    assert_eq!(answer["id"], 7, "{answer}");
    answer
}

/// A plain `tools/call`: its text content and whether it is an error.
fn tool_text(server: &Server, key: &str, tool: &str, arguments: Value) -> (String, bool) {
    let answer = rpc(
        server,
        key,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    let result = &answer["result"];
    let text = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    (text, result["isError"] == true)
}

#[test]
fn plain_json_rpc_over_http_needs_no_accept_header_initialize_or_session() {
    let (server, keys) = Server::start_keyed(
        common::Server::default_config(),
        "retrieval",
        true,
        &["acme"],
    );
    let key = keys[0].as_str();

    let listed = rpc(&server, key, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6, "{listed}");

    let (said, failed) = tool_text(
        &server,
        key,
        "remember",
        json!({"user": "ann", "text": "My favourite tea is genmaicha."}),
    );
    assert!(!failed && said.contains("1 turn(s) added"), "{said}");
    let (found, failed) = tool_text(
        &server,
        key,
        "search",
        json!({"user": "ann", "query": "favourite tea"}),
    );
    assert!(!failed && found.contains("genmaicha"), "{found}");
    // A wrong argument is a tool result too, not a protocol error.
    let (message, failed) = tool_text(&server, key, "recall", json!({"user": "ann"}));
    assert!(failed);
    assert_eq!(message, "error (invalid_request): missing field `query`");

    // A notification is accepted with no body; an initialize is answered in JSON, and opens
    // no session for a client that does not take event streams.
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post_raw(&server, Some(key), &[JSON], &initialized.to_string());
    assert_eq!(response.status(), 202);
    assert_eq!(response.text().unwrap(), "");
    let initialize = rpc(
        &server,
        key,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "curl", "version": "1"}}),
    );
    assert_eq!(initialize["result"]["serverInfo"]["name"], "mnemos");

    // `Accept: application/json` alone, as a strict JSON client sends it, is served too.
    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}).to_string();
    let response = post_raw(
        &server,
        Some(key),
        &[JSON, ("accept", "application/json")],
        &list,
    );
    assert_eq!(response.status(), 200);
    // Without a key the HTTP layer still refuses.
    assert_eq!(post_raw(&server, None, &[JSON], &list).status(), 401);

    // A batch is refused as one: send one message per request.
    let batch = format!("[{list}]");
    let response = post_raw(&server, Some(key), &[JSON], &batch);
    assert_eq!(response.status(), 400);
    let error: Value = response.json().unwrap();
    assert_eq!(error["error"]["code"], -32600, "{error}");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("batch"));
}

#[test]
fn unreadable_bodies_get_json_rpc_errors() {
    let (server, keys) = Server::start_keyed(
        common::Server::default_config(),
        "retrieval",
        true,
        &["acme"],
    );
    let key = keys[0].as_str();

    // With the headers an SDK sends, and without.
    let malformed = "{\"jsonrpc\": \"2.0\", ";
    let response = post_raw(&server, Some(key), &[JSON, SDK_ACCEPT], malformed);
    assert_eq!(response.status(), 400);
    let error: Value = response.json().unwrap();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    let response = post_raw(&server, Some(key), &[JSON], malformed);
    assert_eq!(response.status(), 400);
    let error: Value = response.json().unwrap();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["jsonrpc"], "2.0");
    let response = post_raw(&server, Some(key), &[JSON], "{\"id\": 3, \"method\": 4}");
    assert_eq!(response.status(), 400);
    let error: Value = response.json().unwrap();
    assert_eq!(error["error"]["code"], -32600, "{error}");
    assert_eq!(error["id"], 3, "{error}");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let response = post_raw(&server, Some(key), &[("content-type", "text/plain")], &list);
    assert_eq!(response.status(), 415);
    assert!(response.text().unwrap().contains("Content-Type"));
    // Over the server's body limit (64 KiB in the tests).
    let long = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "remember", "arguments": {"user": "ann", "text": "x".repeat(70_000)}}});
    let response = post_raw(&server, Some(key), &[JSON], &long.to_string());
    assert_eq!(response.status(), 413);
    // Within a session too.
    let session = open_session(&server, key);
    let in_session = [JSON, SDK_ACCEPT, ("mcp-session-id", session.as_str())];
    let response = post_raw(&server, Some(key), &in_session, malformed);
    assert_eq!(response.status(), 400);
}

#[test]
fn ending_a_session_is_answered_200() {
    let (server, keys) = Server::start_keyed(
        common::Server::default_config(),
        "retrieval",
        true,
        &["acme"],
    );
    let key = keys[0].as_str();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    // An SDK-style session: opened, ended with 200, then unknown.
    let session = open_session(&server, key);
    let in_session = [JSON, SDK_ACCEPT, ("mcp-session-id", session.as_str())];
    let response = server
        .client
        .delete(server.url("/mcp"))
        .bearer_auth(key)
        .header("mcp-session-id", &session)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        post_raw(&server, Some(key), &in_session, &list).status(),
        404
    );
}

/// Open a session as the SDKs do (an `initialize` accepting event streams): its id.
fn open_session(server: &Server, key: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let response = post_raw(
        server,
        Some(key),
        &[JSON, SDK_ACCEPT],
        &initialize.to_string(),
    );
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(response.text().unwrap().contains("mnemos"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post_raw(
        server,
        Some(key),
        &[JSON, SDK_ACCEPT, ("mcp-session-id", session.as_str())],
        &initialized.to_string(),
    );
    assert_eq!(response.status(), 202);
    session
}

#[test]
fn a_session_answers_only_the_key_that_opened_it() {
    let (server, keys) = Server::start_keyed(
        common::Server::default_config(),
        "retrieval",
        true,
        &["acme", "globex"],
    );
    let (acme, globex) = (keys[0].as_str(), keys[1].as_str());
    let session = open_session(&server, acme);
    let in_session = [JSON, SDK_ACCEPT, ("mcp-session-id", session.as_str())];
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();

    // Another tenant's key is told the session does not exist, whatever it asks.
    assert_eq!(
        post_raw(&server, Some(globex), &in_session, &list).status(),
        404
    );
    let delete = |key: &str| {
        server
            .client
            .delete(server.url("/mcp"))
            .bearer_auth(key)
            .header("mcp-session-id", &session)
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(delete(globex), 404);
    // The session is still the opener's.
    let response = post_raw(&server, Some(acme), &in_session, &list);
    assert_eq!(response.status(), 200);
    drop(response);
    assert_eq!(delete(acme), 200);
    assert_eq!(delete(acme), 404);
}

#[test]
fn a_call_naming_no_user_acts_for_the_servers_default_user_and_agent() {
    let config = mnemos_server::ServerConfig {
        mcp_defaults: mnemos_server::McpDefaults {
            user: Some("ann".into()),
            agent: Some("desktop".into()),
        },
        ..common::Server::default_config()
    };
    let (server, keys) = Server::start_keyed(config, "retrieval", true, &["acme"]);
    let key = keys[0].as_str();
    let rt = runtime();
    rt.block_on(async {
        let client = connect(&server, key).await;
        let instructions = client.peer_info().unwrap().instructions.clone();
        let instructions = instructions.unwrap_or_default();
        assert!(instructions.contains("'ann'"), "{instructions}");
        assert!(instructions.contains("'desktop'"), "{instructions}");
        let tools = client.list_all_tools().await.unwrap();
        for tool in &tools {
            let schema = Value::Object((*tool.input_schema).clone());
            let required = schema["required"].as_array().cloned().unwrap_or_default();
            assert!(
                !required.contains(&json!("user")),
                "{}: {schema}",
                tool.name
            );
        }

        let (said, _) = ok(
            &client,
            "remember",
            json!({"text": "I keep bees on my roof."}),
        )
        .await;
        assert!(said.contains("user 'ann' (agent desktop"), "{said}");
        let (_, listed) = ok(&client, "list", json!({})).await;
        assert_eq!(listed["total"], 1);
        let (context, _) = ok(
            &client,
            "recall",
            json!({"query": "What do I keep on my roof?"}),
        )
        .await;
        assert!(context.contains("bees"), "{context}");
        // Naming a user still reaches that user.
        let (other, _) = ok(&client, "recall", json!({"user": "bob", "query": "bees"})).await;
        assert!(
            other.contains("nothing remembered about user 'bob'"),
            "{other}"
        );
        client.cancel().await.unwrap();
    });
}

#[test]
fn tool_arguments_that_are_wrong_are_tool_errors_naming_the_argument() {
    let (server, keys) = Server::start_keyed(
        common::Server::default_config(),
        "retrieval",
        true,
        &["acme"],
    );
    let rt = runtime();
    rt.block_on(async {
        let client = connect(&server, &keys[0]).await;
        // Without a default user, a call naming none says how to fix it.
        let message = tool_error(&client, "recall", json!({"query": "x"})).await;
        assert_eq!(
            message,
            "error (invalid_input): no user given: pass `user`, or start the server with --user"
        );
        let message = tool_error(&client, "recall", json!({"user": "ann"})).await;
        assert_eq!(message, "error (invalid_request): missing field `query`");
        let message = tool_error(
            &client,
            "search",
            json!({"user": "ann", "query": "x", "top_k": "ten"}),
        )
        .await;
        assert!(
            message.starts_with("error (invalid_request): top_k: invalid type"),
            "{message}"
        );
        let message = tool_error(&client, "list", json!({"user": "ann", "tenant": "globex"})).await;
        assert!(
            message.starts_with("error (invalid_request): unknown field `tenant`"),
            "{message}"
        );
        let message = tool_error(
            &client,
            "remember",
            json!({"user": "ann", "turns": [{"role": "bot", "text": "hi"}]}),
        )
        .await;
        assert!(
            message.starts_with("error (invalid_request): turns[0].role: unknown variant `bot`"),
            "{message}"
        );
        let message = tool_error(&client, "show", json!({"user": "ann", "view": 3})).await;
        assert!(
            message.starts_with("error (invalid_request): view: "),
            "{message}"
        );
        client.cancel().await.unwrap();
    });
}

#[test]
fn search_and_list_give_the_whole_text_of_a_long_memory() {
    let (server, keys) = Server::start_keyed(
        common::Server::default_config(),
        "retrieval",
        true,
        &["acme"],
    );
    let long = "We spent the whole afternoon moving boxes into the new flat on the third floor, \
        and the lift broke twice, so most of the books went up the stairs by hand. My brother \
        brought pizza, the neighbours lent us a trolley, and by eight everything was inside. \
        The landlord left the keys with the concierge and a note about the safe in the \
        hallway cupboard. The vault code is 4711.";
    assert!(long.len() > 300, "{}", long.len());
    let rt = runtime();
    rt.block_on(async {
        let client = connect(&server, &keys[0]).await;
        ok(&client, "remember", json!({"user": "ann", "text": long})).await;
        // Most clients give the model only the text content, not `structuredContent`.
        let (found, _) = ok(
            &client,
            "search",
            json!({"user": "ann", "query": "vault code"}),
        )
        .await;
        assert!(found.contains("The vault code is 4711."), "{found}");
        let (listed, _) = ok(&client, "list", json!({"user": "ann"})).await;
        assert!(listed.contains("The vault code is 4711."), "{listed}");
        client.cancel().await.unwrap();
    });
}
