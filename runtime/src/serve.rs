//! The small web servers edgert starts on an address a flag names (`monitor --prometheus`,
//! `--preview`): the address checked as the flag's, loopback unless the caller allows more, bound.

use std::net::SocketAddr;

use crate::Error;

/// Binds `flag`'s `address` (like `example`; port 0 picks a free one): the server and the address
/// it listens on. `off_loopback` is what to do instead of a non-loopback address, or `None` where
/// one is allowed.
pub fn listen(
    flag: &str,
    address: &str,
    example: &str,
    off_loopback: Option<&str>,
) -> Result<(tiny_http::Server, SocketAddr), Error> {
    let wanted: SocketAddr = address
        .parse()
        .map_err(|_| Error::Usage(format!("{flag} {address}: not an address like {example}")))?;
    if let Some(instead) = off_loopback.filter(|_| !wanted.ip().is_loopback()) {
        return Err(Error::Usage(format!("{flag} {address}: not a loopback address; {instead}")));
    }
    let server = tiny_http::Server::http(wanted)
        .map_err(|e| Error::Serve { address: address.into(), reason: e.to_string() })?;
    let bound = server.server_addr().to_ip().unwrap_or(wanted);
    Ok((server, bound))
}
