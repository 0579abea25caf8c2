//! The client state machine over a [`Transport`]: NEGOTIATE, the two
//! SESSION_SETUP legs, then signed TREE_CONNECT, CREATE, READ/WRITE,
//! CLOSE and LOGOFF, with credits, message ids, session, tree and file
//! ids tracked and every response checked against its request.

use std::collections::HashMap;

use super::create::{self, FileId};
use super::credits::Credits;
use super::header::{self, Header, command, flags, status};
#[cfg(test)]
use super::io::ReadResponse;
use super::io::{self, Data};
use super::negotiate::{CAP_LARGE_MTU, NegotiateRequest, NegotiateResponse, SIGNING_ENABLED};
use super::ntlm::{self, Credentials};
use super::session;
use super::signing::{self, DIALECT_311, Key, PreauthHash};
use super::spnego;
use super::tree;
use crate::error::{Error, Result};
use crate::smbd::proto::BufferDescriptor;

/// Moves whole SMB2 messages (no RFC 1002 length prefix): SMB Direct's
/// reassembled upper-layer messages, or memory in tests.
pub trait Transport {
    /// Sends one message.
    fn send(&mut self, message: &[u8]) -> Result<()>;
    /// Waits for the next message.
    fn receive(&mut self) -> Result<Vec<u8>>;
}

/// What to connect as.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server's name or address, as TREE_CONNECT's `\\server\share`.
    pub server_name: String,
    /// Who authenticates.
    pub credentials: Credentials,
    /// Dialects to offer (a subset of [`super::negotiate::DIALECTS`]).
    pub dialects: Vec<u16>,
    /// Credits the client asks to hold (Windows asks for up to 512).
    pub credit_target: u16,
    /// ClientGuid.
    pub client_guid: [u8; 16],
}

/// A response, checked and matched to its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Its header.
    pub header: Header,
    /// The whole message, header included (offsets count from it).
    pub message: Vec<u8>,
}

/// A connected share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tree {
    /// TreeId.
    pub id: u32,
    /// The TREE_CONNECT response.
    pub info: tree::Response,
}

/// An authenticated SMB 3 session on one connection.
#[derive(Debug)]
pub struct Connection<T> {
    transport: T,
    credits: Credits,
    credit_target: u16,
    negotiated: NegotiateResponse,
    session_id: u64,
    signing_key: Option<Key>,
    /// Requests sent and not yet answered, by MessageId: their command.
    pending: HashMap<u64, u16>,
    /// READ responses whose signature covered the RFC 1002 length too.
    length_prefixed_signatures: u64,
}

fn failed(command: u16, status: u32) -> Error {
    Error::msg(format!(
        "SMB2 {} failed: {} ({status:#010X})",
        header::command_name(command),
        status::name(status)
    ))
}

impl<T: Transport> Connection<T> {
    /// NEGOTIATE and authenticate: a signed-in session, ready for
    /// TREE_CONNECT.
    pub fn connect(transport: T, config: &Config) -> Result<Self> {
        let mut salt = vec![0u8; 32];
        getrandom::fill(&mut salt)
            .map_err(|e| Error::msg(format!("no random preauth salt: {e}")))?;
        let request = NegotiateRequest {
            dialects: config.dialects.clone(),
            security_mode: SIGNING_ENABLED,
            capabilities: CAP_LARGE_MTU,
            client_guid: config.client_guid,
            salt,
        };
        let mut c = Self {
            transport,
            credits: Credits::default(),
            credit_target: config.credit_target.max(1),
            negotiated: NegotiateResponse {
                security_mode: 0,
                dialect: 0,
                server_guid: [0; 16],
                capabilities: 0,
                max_transact_size: 0,
                max_read_size: 0,
                max_write_size: 0,
                security_buffer: Vec::new(),
                contexts: Vec::new(),
            },
            session_id: 0,
            signing_key: None,
            pending: HashMap::new(),
            length_prefixed_signatures: 0,
        };
        let mut preauth = PreauthHash::default();
        let sent = c.submit(command::NEGOTIATE, 0, &request.encode(), 1)?;
        let r = c.receive()?;
        if r.header.status != status::SUCCESS {
            return Err(failed(command::NEGOTIATE, r.header.status));
        }
        let negotiated = NegotiateResponse::decode(&r.message)?;
        negotiated.validate(&request)?;
        if negotiated.dialect == DIALECT_311 {
            preauth.update(&sent);
            preauth.update(&r.message);
        }
        let mechs = spnego::offered_mechs(&negotiated.security_buffer)?;
        if !mechs.is_empty() && !mechs.iter().any(|m| m == spnego::NTLMSSP_OID) {
            return Err(Error::msg("the server does not offer NTLMSSP in SPNEGO"));
        }
        c.negotiated = negotiated;
        c.session_setup(&config.credentials, preauth)?;
        Ok(c)
    }

    /// The two SESSION_SETUP legs (3.2.4.2.3, 3.2.5.3).
    fn session_setup(&mut self, creds: &Credentials, mut preauth: PreauthHash) -> Result<()> {
        let dialect = self.negotiated.dialect;
        let mode = SIGNING_ENABLED as u8;
        let ntlm_negotiate = ntlm::negotiate_message();
        let body = session::request(mode, &spnego::neg_token_init(&ntlm_negotiate))?;
        let sent = self.submit(command::SESSION_SETUP, 0, &body, 1)?;
        let r = self.receive()?;
        if r.header.status != status::MORE_PROCESSING_REQUIRED {
            return Err(
                failed(command::SESSION_SETUP, r.header.status).context("the NTLM NEGOTIATE leg")
            );
        }
        if r.header.session_id == 0 {
            return Err(Error::msg("SESSION_SETUP response without a SessionId"));
        }
        self.session_id = r.header.session_id;
        if dialect == DIALECT_311 {
            preauth.update(&sent);
            preauth.update(&r.message);
        }
        let token = spnego::parse_server_token(&session::Response::decode(&r.message)?.token)?;
        let challenge_bytes = token
            .response_token
            .ok_or_else(|| Error::msg("SESSION_SETUP: no NTLM CHALLENGE in the server's token"))?;
        let challenge = ntlm::ChallengeMessage::decode(&challenge_bytes)?;
        let auth = ntlm::authenticate(
            creds,
            &ntlm_negotiate,
            &challenge_bytes,
            &challenge,
            ntlm::random_client_challenge()?,
            ntlm::filetime_now(),
        )?;
        let body = session::request(mode, &spnego::neg_token_resp(&auth.message))?;
        let sent = self.submit(command::SESSION_SETUP, 0, &body, 1)?;
        if dialect == DIALECT_311 {
            preauth.update(&sent);
        }
        // The final response is signed with the key of the hash so far
        // (3.1.1 always, 3.0.2 when the server signs): derive it first.
        self.signing_key = Some(signing::signing_key(dialect, &auth.session_key, &preauth.0));
        let r = self.receive()?;
        if r.header.status != status::SUCCESS {
            self.signing_key = None;
            return Err(failed(command::SESSION_SETUP, r.header.status));
        }
        if dialect == DIALECT_311 && r.header.flags & flags::SIGNED == 0 {
            return Err(Error::msg(
                "the final SMB 3.1.1 SESSION_SETUP response is not signed (3.3.5.5.3 requires it)",
            ));
        }
        let done = session::Response::decode(&r.message)?;
        if let Some(state) = spnego::parse_server_token(&done.token)?.neg_state
            && state == spnego::REJECT
        {
            return Err(Error::msg("SPNEGO: the server rejected the authentication"));
        }
        if done.session_flags & (session::SESSION_FLAG_IS_GUEST | session::SESSION_FLAG_IS_NULL)
            != 0
        {
            return Err(Error::msg(format!(
                "the server made this a guest/anonymous session (SessionFlags {:#06x}): unknown user?",
                done.session_flags
            )));
        }
        if done.session_flags & session::SESSION_FLAG_ENCRYPT_DATA != 0 {
            return Err(Error::msg(
                "the server requires SMB3 encryption, which this client does not implement",
            ));
        }
        Ok(())
    }

    /// Sends a request: spends its credits, takes its MessageId, signs
    /// it once the session has a key. Returns the bytes sent.
    pub fn submit(&mut self, cmd: u16, tree_id: u32, body: &[u8], charge: u16) -> Result<Vec<u8>> {
        let message_id = self.credits.take(charge)?;
        let want = u32::from(self.credit_target)
            .saturating_sub(self.credits.available())
            .max(u32::from(charge));
        let h = Header {
            credit_charge: charge,
            command: cmd,
            credits: want.min(u32::from(u16::MAX)) as u16,
            message_id,
            tree_id,
            session_id: self.session_id,
            ..Header::default()
        };
        let mut m = Vec::with_capacity(header::HEADER_LEN + body.len());
        h.encode_into(&mut m);
        m.extend_from_slice(body);
        // NEGOTIATE and SESSION_SETUP are never signed by the client.
        if let Some(key) = &self.signing_key
            && cmd != command::NEGOTIATE
            && cmd != command::SESSION_SETUP
        {
            signing::sign(key, &mut m);
        }
        self.transport.send(&m)?;
        self.pending.insert(message_id, cmd);
        Ok(m)
    }

    /// The next final response to a pending request: interim
    /// STATUS_PENDING answers are absorbed (their credits counted),
    /// signatures checked.
    pub fn receive(&mut self) -> Result<Response> {
        loop {
            let message = self.transport.receive()?;
            let h = Header::decode(&message)?;
            if !h.is_response() {
                return Err(Error::msg("the server sent a request, not a response"));
            }
            let Some(&cmd) = self.pending.get(&h.message_id) else {
                return Err(Error::msg(format!(
                    "SMB2 response for MessageId {} which no request is waiting for",
                    h.message_id
                )));
            };
            if h.command != cmd {
                return Err(Error::msg(format!(
                    "SMB2 response to MessageId {} is a {}, the request was a {}",
                    h.message_id,
                    header::command_name(h.command),
                    header::command_name(cmd)
                )));
            }
            self.credits.grant(h.credits);
            let interim = h.status == status::PENDING && h.flags & flags::ASYNC_COMMAND != 0;
            if h.flags & flags::SIGNED != 0 {
                let key = self.signing_key.as_ref().ok_or_else(|| {
                    Error::msg("a signed SMB2 response before the session has a key")
                })?;
                // ksmbd signs an RDMA-channel READ response over its
                // transport's length prefix too (see
                // signing::verify_length_prefixed): accepted for READ
                // only, where that server does it.
                let checked = signing::verify(key, &message).or_else(|e| {
                    if cmd == command::READ
                        && signing::verify_length_prefixed(key, &message).is_ok()
                    {
                        self.length_prefixed_signatures += 1;
                        Ok(())
                    } else {
                        Err(e)
                    }
                });
                checked.map_err(|e| {
                    e.context(format!(
                        "SMB2 {} response of {} bytes (MessageId {}, status {}, dialect {:#06x})",
                        header::command_name(cmd),
                        message.len(),
                        h.message_id,
                        status::name(h.status),
                        self.negotiated.dialect
                    ))
                })?;
            } else if self.signing_key.is_some()
                && cmd != command::SESSION_SETUP
                && h.status == status::SUCCESS
            {
                return Err(Error::msg(format!(
                    "unsigned SMB2 {} response on a signed session",
                    header::command_name(cmd)
                )));
            }
            if interim {
                continue;
            }
            if h.session_id != self.session_id && self.session_id != 0 {
                return Err(Error::msg(format!(
                    "SMB2 response for SessionId {:#x}, ours is {:#x}",
                    h.session_id, self.session_id
                )));
            }
            self.pending.remove(&h.message_id);
            return Ok(Response { header: h, message });
        }
    }

    /// One request, its final response, failing on a non-success status.
    fn call(&mut self, cmd: u16, tree_id: u32, body: &[u8], charge: u16) -> Result<Response> {
        if !self.pending.is_empty() {
            return Err(Error::msg(
                "a synchronous SMB2 call while pipelined requests are pending",
            ));
        }
        self.submit(cmd, tree_id, body, charge)?;
        let r = self.receive()?;
        if r.header.status != status::SUCCESS {
            return Err(failed(cmd, r.header.status));
        }
        Ok(r)
    }

    /// TREE_CONNECT to `\\server\share`.
    pub fn tree_connect(&mut self, server: &str, share: &str) -> Result<Tree> {
        let r = self.call(command::TREE_CONNECT, 0, &tree::request(server, share)?, 1)?;
        let info = tree::Response::decode(&r.message)?;
        if info.share_flags & tree::SHARE_FLAG_ENCRYPT_DATA != 0 {
            return Err(Error::msg(format!(
                "share {share} requires SMB3 encryption, which this client does not implement"
            )));
        }
        Ok(Tree {
            id: r.header.tree_id,
            info,
        })
    }

    /// CREATE `name` on `tree`.
    pub fn create(
        &mut self,
        tree: &Tree,
        name: &str,
        disposition: u32,
    ) -> Result<create::Response> {
        let body = create::request(name, create::ACCESS_READ_WRITE, disposition)?;
        let r = self.call(command::CREATE, tree.id, &body, 1)?;
        create::Response::decode(&r.message)
    }

    /// WRITE at `offset`; returns the bytes the server wrote.
    #[cfg(test)]
    pub fn write(
        &mut self,
        tree: &Tree,
        file: FileId,
        offset: u64,
        data: &Data<'_>,
    ) -> Result<u32> {
        let (body, n) = io::write_request(file, offset, data)?;
        let r = self.call(command::WRITE, tree.id, &body, io::credit_charge(n))?;
        let written = io::decode_write_response(&r.message)?;
        if written != n {
            return Err(Error::msg(format!(
                "SMB2 WRITE of {n} bytes wrote {written}"
            )));
        }
        Ok(written)
    }

    /// Sends a WRITE without waiting for it (queue depth above one):
    /// returns its MessageId and size. Match it in [`Self::receive`] and
    /// parse it with [`io::decode_write_response`].
    pub fn submit_write(
        &mut self,
        tree: &Tree,
        file: FileId,
        offset: u64,
        data: &Data<'_>,
    ) -> Result<(u64, u32)> {
        let (body, n) = io::write_request(file, offset, data)?;
        let id = self.credits.next_message_id();
        self.submit(command::WRITE, tree.id, &body, io::credit_charge(n))?;
        Ok((id, n))
    }

    /// Sends a READ without waiting for it: returns its MessageId. Match
    /// it in [`Self::receive`] and parse it with
    /// [`io::decode_read_response`].
    pub fn submit_read(
        &mut self,
        tree: &Tree,
        file: FileId,
        offset: u64,
        length: u32,
        rdma: Option<&[BufferDescriptor]>,
    ) -> Result<u64> {
        let body = io::read_request(file, offset, length, rdma)?;
        let id = self.credits.next_message_id();
        self.submit(command::READ, tree.id, &body, io::credit_charge(length))?;
        Ok(id)
    }

    /// READ `length` bytes at `offset`, inline or into `rdma` buffers.
    #[cfg(test)]
    pub fn read(
        &mut self,
        tree: &Tree,
        file: FileId,
        offset: u64,
        length: u32,
        rdma: Option<&[BufferDescriptor]>,
    ) -> Result<ReadResponse> {
        let body = io::read_request(file, offset, length, rdma)?;
        let r = self.call(command::READ, tree.id, &body, io::credit_charge(length))?;
        io::decode_read_response(&r.message)
    }

    /// CLOSE a handle.
    pub fn close(&mut self, tree: &Tree, file: FileId) -> Result<()> {
        let r = self.call(command::CLOSE, tree.id, &create::close_request(file), 1)?;
        create::decode_close_response(&r.message)
    }

    /// LOGOFF; gives the transport back for a clean disconnect.
    pub fn logoff(mut self) -> Result<T> {
        let r = self.call(command::LOGOFF, 0, &session::logoff_request(), 1)?;
        session::decode_logoff_response(&r.message)?;
        Ok(self.transport)
    }

    /// The transport (an SMB Direct connection's QP registers RDMA
    /// buffers between requests).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The NEGOTIATE response the session runs under.
    pub fn negotiated(&self) -> &NegotiateResponse {
        &self.negotiated
    }

    /// Credits on hand.
    pub fn credits_available(&self) -> u32 {
        self.credits.available()
    }

    /// Requests sent and not yet answered.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// SessionId.
    #[cfg(test)]
    pub fn session_id(&self) -> u64 {
        self.session_id
    }

    /// The next MessageId.
    #[cfg(test)]
    pub fn next_message_id(&self) -> u64 {
        self.credits.next_message_id()
    }

    /// READ responses accepted with ksmbd's length-prefixed signature.
    pub fn length_prefixed_signatures(&self) -> u64 {
        self.length_prefixed_signatures
    }
}
