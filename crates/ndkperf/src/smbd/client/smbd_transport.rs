//! [`Transport`] over an SMB Direct connection ([MS-SMBD]): each SMB2
//! message is one upper-layer message, fragmented and reassembled by
//! [`SmbdConn`], with credits and keepalives handled there.

use super::connection::Transport;
use crate::error::Result;
use crate::smbd::conn::SmbdConn;

/// The SMB2 client's view of a negotiated SMB Direct connection.
#[derive(Debug)]
pub struct SmbdTransport<'a> {
    conn: &'a mut SmbdConn,
    invalidated: Vec<u32>,
}

impl<'a> SmbdTransport<'a> {
    /// Wraps a connection whose SMB Direct negotiation is done.
    pub fn new(conn: &'a mut SmbdConn) -> Self {
        Self {
            conn,
            invalidated: Vec::new(),
        }
    }

    /// Local tokens the server invalidated with Send-with-Invalidate
    /// (SMB2_CHANNEL_RDMA_V1_INVALIDATE responses), oldest first: the
    /// I/O layer must not invalidate these itself.
    pub fn take_invalidated(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.invalidated)
    }

    /// The connection (for memory registration and RDMA completions).
    pub fn conn(&mut self) -> &mut SmbdConn {
        self.conn
    }
}

impl Transport for SmbdTransport<'_> {
    fn send(&mut self, message: &[u8]) -> Result<()> {
        self.conn.queue(message, None, None)
    }

    fn receive(&mut self) -> Result<Vec<u8>> {
        loop {
            if let Some(m) = self.conn.take_message() {
                self.invalidated.extend(m.invalidated);
                return Ok(m.data);
            }
            // Waits for completions; fails after SMB Direct's stall
            // timeout or on a dead connection.
            self.conn.poll()?;
        }
    }
}
