//! The preview's HTTP side: the page, the MJPEG stream, a snapshot and the figures, each behind
//! the token.

use std::io::Write;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tiny_http::{Header, Request, Response, Server};

use super::hub::{same_token, Hub};

const PAGE: &str = include_str!("page.html");
const BOUNDARY: &str = "edgertframe";

pub fn spawn(http: Server, hub: Arc<Hub>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        while !hub.closed() {
            match http.recv_timeout(Duration::from_millis(100)) {
                Ok(Some(request)) => handle(request, &hub),
                Ok(None) => {}
                Err(_) => break,
            }
        }
    })
}

fn handle(request: Request, hub: &Arc<Hub>) {
    let url = request.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let token = query.split('&').find_map(|pair| pair.strip_prefix("token=")).unwrap_or("");
    if !same_token(token, &hub.token) {
        return reply(
            request,
            403,
            "text/plain",
            "forbidden: open the address edgert printed at start, with its token\n",
        );
    }
    match path {
        "/" | "/index.html" => reply(request, 200, "text/html; charset=utf-8", PAGE),
        "/stats.json" => {
            let body = serde_json::to_string(&hub.figures()).unwrap_or_default();
            reply(request, 200, "application/json", &body)
        }
        "/frame.jpg" => match hub.snapshot() {
            Some(jpeg) => {
                let response =
                    Response::from_data(jpeg.as_slice()).with_header(header("Content-Type", "image/jpeg"));
                let _ = request.respond(response.with_header(header("Cache-Control", "no-store")));
            }
            None => reply(request, 503, "text/plain", "no frame yet; ask again\n"),
        },
        "/stream.mjpg" => match hub.join() {
            Some(client) => {
                std::thread::spawn(move || stream(request, client));
            }
            None => reply(request, 503, "text/plain", "too many viewers; close one and reload\n"),
        },
        _ => reply(request, 404, "text/plain", "not found\n"),
    }
}

/// Frames to one browser as they come, until it goes away or the preview closes. Written on this
/// client's own thread, so a stalled browser blocks only itself.
fn stream(request: Request, mut client: super::hub::Client) {
    let mut out = request.into_writer();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: multipart/x-mixed-replace; boundary={BOUNDARY}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    );
    if out.write_all(head.as_bytes()).and_then(|()| out.flush()).is_err() {
        return;
    }
    while let Some(jpeg) = client.next() {
        let part =
            format!("--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\n\r\n", jpeg.len());
        let sent = out
            .write_all(part.as_bytes())
            .and_then(|()| out.write_all(&jpeg))
            .and_then(|()| out.write_all(b"\r\n"))
            .and_then(|()| out.flush());
        if sent.is_err() {
            return;
        }
    }
}

fn reply(request: Request, status: u16, kind: &str, body: &str) {
    let response =
        Response::from_string(body).with_status_code(status).with_header(header("Content-Type", kind));
    let _ = request.respond(response.with_header(header("Cache-Control", "no-store")));
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("ASCII header")
}
