//! The preview's HTTP side: the page, the MJPEG stream, a snapshot and the figures, each behind
//! the token; every request on a connection of its own (`serve`), so a client without the token,
//! a slow one or one that does not read costs a bounded thread and holds up nobody.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::hub::{same_token, Hub};
use crate::serve::{Request, Server};

const PAGE: &str = include_str!("page.html");
const BOUNDARY: &str = "edgertframe";

pub fn spawn(http: Server, hub: Arc<Hub>) -> JoinHandle<()> {
    let open = hub.clone();
    std::thread::spawn(move || http.serve(move || open.closed(), move |request| handle(request, &hub)))
}

fn handle(request: Request, hub: &Arc<Hub>) {
    if !same_token(request.query_value("token"), &hub.token) {
        let forbidden = "forbidden: open the address edgert printed at start, with its token\n";
        return request.respond(403, "text/plain", forbidden.as_bytes());
    }
    match request.path.as_str() {
        "/" | "/index.html" => request.respond(200, "text/html; charset=utf-8", PAGE.as_bytes()),
        "/stats.json" => {
            let body = serde_json::to_string(&hub.figures()).unwrap_or_default();
            request.respond(200, "application/json", body.as_bytes())
        }
        "/frame.jpg" => match hub.snapshot() {
            Some(jpeg) => request.respond(200, "image/jpeg", &jpeg),
            None => request.respond(503, "text/plain", b"no frame yet; ask again\n"),
        },
        "/stream.mjpg" => match hub.join() {
            Some(client) => stream(request.into_stream(), client),
            None => request.respond(503, "text/plain", b"too many viewers; close one and reload\n"),
        },
        _ => request.respond(404, "text/plain", b"not found\n"),
    }
}

/// Frames to one browser as they come, until it goes away, stops reading or the preview closes.
/// Written on this client's own thread, so a stalled browser blocks only itself.
fn stream(mut out: TcpStream, mut client: super::hub::Client) {
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
