//! The throwaway PostgreSQL servers: both installations start, answer SQL (Chinese text
//! included), the bundled one has a working pgvector HNSW index, databases are created fresh,
//! and an owned server's port is closed once it is dropped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{Ipv4Addr, TcpStream};

use mnemos_testkit::postgres::{shared_server, shared_system_server, PgInstall, TestPostgres};

fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

#[test]
fn debian_server_runs_sql_and_stops_when_dropped() {
    let install = PgInstall::system().unwrap();
    assert!(
        !install.pgvector,
        "Debian bookworm ships no pgvector: {install:?}"
    );
    let server = TestPostgres::start(&install).unwrap();
    let port = server.port();
    let mut db = client(&server.url());
    let row = db
        .query_one("SELECT $1::text || '，你好'", &[&"张三"])
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "张三，你好");
    drop(db);
    drop(server);
    assert!(
        TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err(),
        "the server still listens on {port} after drop"
    );
}

#[test]
fn bundled_server_has_pgvector_with_hnsw() {
    let server = shared_server().unwrap();
    assert!(server.has_pgvector(), "{}", server.label());
    let mut db = client(&server.create_database().unwrap());
    db.batch_execute(
        "CREATE EXTENSION vector;
         CREATE TABLE items (id int PRIMARY KEY, embedding vector(3));
         CREATE INDEX ON items USING hnsw (embedding vector_cosine_ops);
         INSERT INTO items VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]');",
    )
    .unwrap();
    let nearest: Vec<i32> = db
        .query(
            "SELECT id FROM items ORDER BY embedding <=> '[1,0,0]' LIMIT 2",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(nearest, vec![1, 3]);
}

#[test]
fn shared_servers_hand_out_fresh_databases() {
    let server = shared_system_server().unwrap();
    let first = server.create_database().unwrap();
    let second = server.create_database().unwrap();
    assert_ne!(first, second);
    let mut a = client(&first);
    a.batch_execute("CREATE TABLE only_in_first (x int)")
        .unwrap();
    let mut b = client(&second);
    let tables: i64 = b
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_first'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0);
}
