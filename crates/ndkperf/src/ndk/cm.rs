//! Connection management: connectors (connect, accept, complete,
//! disconnect) and listeners (listen, connect events).

use std::net::SocketAddr;
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use ndkpi::{
    NDK_CONNECTOR, NDK_CONNECTOR_DISPATCH, NDK_LISTENER, NDK_LISTENER_DISPATCH, NDK_OBJECT_HEADER,
    PVOID, SOCKADDR_IN6, STATUS_BUFFER_TOO_SMALL, STATUS_SUCCESS,
};

use super::signal::{Event, Signal, request_done};
use super::{NdkAddr, Qp, check, close_object, dispatch_table, entry};
use crate::error::{Error, Result};

dispatch_table!(connector_table, NDK_CONNECTOR, NDK_CONNECTOR_DISPATCH);
dispatch_table!(listener_table, NDK_LISTENER, NDK_LISTENER_DISPATCH);

/// How long a disconnect on drop may take.
const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// `NDK_FN_DISCONNECT_EVENT_CALLBACK`: the peer closed (or the connection
/// broke).
unsafe extern "win64" fn disconnect_event(context: PVOID) {
    // SAFETY: the connector's `Event` reference, released only after the
    // connector's close completed.
    let event = unsafe { Event::from_context(context) };
    event.fire(None, None);
}

/// One connection's connector.
#[derive(Debug)]
pub struct Connector {
    raw: *mut NDK_CONNECTOR,
    disconnected: Arc<Event>,
    context: PVOID,
    connected: bool,
}

// SAFETY: connector entry points may be called from any thread.
unsafe impl Send for Connector {}

impl Connector {
    pub(super) fn from_raw(raw: *mut NDK_CONNECTOR) -> Result<Self> {
        if raw.is_null() {
            return Err(Error::msg("the provider returned no connector"));
        }
        let (disconnected, context) = Event::new();
        Ok(Self {
            raw,
            disconnected,
            context,
            connected: false,
        })
    }

    /// Runs an asynchronous connector request and waits for it.
    fn request(function: &str, timeout: Duration, call: impl FnOnce(PVOID) -> i32) -> Result<()> {
        let signal = Signal::new();
        let context = signal.context();
        let status = call(context);
        let (status, _) = signal.settle(status, context, timeout, function)?;
        check(function, status)
    }

    /// `NdkConnect` of `qp` from `src` to `dst` (one family) with read
    /// limits and private data; waits for the peer's answer at most
    /// `timeout`.
    pub fn connect(
        &mut self,
        qp: &Qp,
        src: SocketAddr,
        dst: SocketAddr,
        ird: u32,
        ord: u32,
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<()> {
        let f = entry(connector_table(self.raw).NdkConnect, "NdkConnect")?;
        let (mut src, mut dst) = (NdkAddr::new(src), NdkAddr::new(dst));
        let (src_len, dst_len) = (src.byte_len(), dst.byte_len());
        let mut data = private_data.to_vec();
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let pdata = if data.is_empty() {
            ptr::null_mut()
        } else {
            data.as_mut_ptr().cast()
        };
        let raw = self.raw;
        Self::request("NdkConnect", timeout, |context| {
            // SAFETY: our connector and QP; the addresses and private data
            // are read during the call; a `Signal` completion context.
            unsafe {
                f(
                    raw,
                    qp.raw(),
                    src.as_mut_ptr(),
                    src_len,
                    dst.as_mut_ptr(),
                    dst_len,
                    ird,
                    ord,
                    pdata,
                    len,
                    Some(request_done),
                    context,
                )
            }
        })
    }

    /// `NdkGetConnectionData`: the effective read limits and the peer's
    /// private data (as long as the provider says it is).
    pub fn connection_data(&self) -> Result<(u32, u32, Vec<u8>)> {
        let f = entry(
            connector_table(self.raw).NdkGetConnectionData,
            "NdkGetConnectionData",
        )?;
        let (mut ird, mut ord) = (0u32, 0u32);
        let mut len = 0u32;
        // SAFETY: our connector; a null buffer with length 0 asks for the
        // size.
        let status = unsafe {
            f(
                self.raw,
                &raw mut ird,
                &raw mut ord,
                ptr::null_mut(),
                &raw mut len,
            )
        };
        if status != STATUS_SUCCESS && status != STATUS_BUFFER_TOO_SMALL {
            return Err(Error::ndk("NdkGetConnectionData", status));
        }
        let mut data = vec![0u8; len as usize];
        if len > 0 {
            // SAFETY: our connector and a buffer of `len` bytes.
            let status = unsafe {
                f(
                    self.raw,
                    &raw mut ird,
                    &raw mut ord,
                    data.as_mut_ptr().cast(),
                    &raw mut len,
                )
            };
            check("NdkGetConnectionData", status)?;
            data.truncate(len as usize);
        }
        Ok((ird, ord, data))
    }

    /// `NdkCompleteConnect` (active side, after the peer accepted).
    pub fn complete_connect(&mut self, timeout: Duration) -> Result<()> {
        let f = entry(
            connector_table(self.raw).NdkCompleteConnect,
            "NdkCompleteConnect",
        )?;
        let (raw, events) = (self.raw, self.context);
        Self::request("NdkCompleteConnect", timeout, |context| {
            // SAFETY: our connector; the disconnect-event context is our
            // `Event` reference, released after the close; a `Signal`
            // completion context.
            unsafe {
                f(
                    raw,
                    Some(disconnect_event),
                    events,
                    Some(request_done),
                    context,
                )
            }
        })?;
        self.connected = true;
        Ok(())
    }

    /// `NdkAccept` of an incoming connection onto `qp`.
    pub fn accept(
        &mut self,
        qp: &Qp,
        ird: u32,
        ord: u32,
        private_data: &[u8],
        timeout: Duration,
    ) -> Result<()> {
        let f = entry(connector_table(self.raw).NdkAccept, "NdkAccept")?;
        let mut data = private_data.to_vec();
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let pdata = if data.is_empty() {
            ptr::null_mut()
        } else {
            data.as_mut_ptr().cast()
        };
        let (raw, events) = (self.raw, self.context);
        Self::request("NdkAccept", timeout, |context| {
            // SAFETY: our connector and QP; the private data is read
            // during the call; the disconnect-event context is our `Event`
            // reference; a `Signal` completion context.
            unsafe {
                f(
                    raw,
                    qp.raw(),
                    ird,
                    ord,
                    pdata,
                    len,
                    Some(disconnect_event),
                    events,
                    Some(request_done),
                    context,
                )
            }
        })?;
        self.connected = true;
        Ok(())
    }

    /// `NdkReject` with optional private data.
    pub fn reject(&mut self, private_data: &[u8]) -> Result<()> {
        let f = entry(connector_table(self.raw).NdkReject, "NdkReject")?;
        let mut data = private_data.to_vec();
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let pdata = if data.is_empty() {
            ptr::null_mut()
        } else {
            data.as_mut_ptr().cast()
        };
        // SAFETY: our connector; the private data is read during the call.
        let status = unsafe { f(self.raw, pdata, len) };
        check("NdkReject", status)
    }

    /// `NdkDisconnect` (graceful); waits at most `timeout`.
    pub fn disconnect(&mut self, timeout: Duration) -> Result<()> {
        if !self.connected {
            return Ok(());
        }
        self.connected = false;
        let f = entry(connector_table(self.raw).NdkDisconnect, "NdkDisconnect")?;
        let raw = self.raw;
        Self::request("NdkDisconnect", timeout, |context| {
            // SAFETY: our connector and a `Signal` completion context.
            unsafe { f(raw, Some(request_done), context) }
        })
    }

    /// The peer disconnected (or the connection broke).
    pub fn peer_disconnected(&self) -> bool {
        self.disconnected.count() > 0
    }

    /// `NdkGetPeerAddress`.
    pub fn peer_address(&self) -> Result<SocketAddr> {
        let f = entry(
            connector_table(self.raw).NdkGetPeerAddress,
            "NdkGetPeerAddress",
        )?;
        let mut buf = [0u8; size_of::<SOCKADDR_IN6>()];
        let mut len = buf.len() as u32;
        // SAFETY: our connector and a buffer of `len` bytes.
        let status = unsafe { f(self.raw, buf.as_mut_ptr().cast(), &raw mut len) };
        check("NdkGetPeerAddress", status)?;
        NdkAddr::decode(&buf, len as usize).ok_or_else(|| {
            Error::msg(format!(
                "NdkGetPeerAddress gave no socket address ({len} bytes)"
            ))
        })
    }
}

impl Drop for Connector {
    fn drop(&mut self) {
        if self.connected {
            let _ = self.disconnect(DISCONNECT_TIMEOUT);
        }
        let closed = close_object(
            connector_table(self.raw).NdkCloseConnector,
            self.raw.cast::<NDK_OBJECT_HEADER>(),
            "NdkCloseConnector",
        );
        if closed {
            // SAFETY: the close completed, so no disconnect event can come.
            unsafe { Event::release(self.context) };
        }
    }
}

/// `NDK_FN_CLOSE_COMPLETION` of a listener: its connect-event context
/// can go.
unsafe extern "win64" fn listener_closed(context: PVOID) {
    // SAFETY: the listener's `Event` reference; the close completed, so no
    // connect event can come.
    unsafe { Event::release(context) };
}

/// A listener; incoming connections queue up as new connectors.
#[derive(Debug)]
pub struct Listener {
    raw: *mut NDK_LISTENER,
    events: Arc<Event>,
    context: PVOID,
}

// SAFETY: listener entry points may be called from any thread.
unsafe impl Send for Listener {}
// SAFETY: shared use only takes queued connectors (`next`), which goes
// through the event's lock.
unsafe impl Sync for Listener {}

impl Listener {
    pub(super) fn from_raw(raw: *mut NDK_LISTENER, events: Arc<Event>, context: PVOID) -> Self {
        Self {
            raw,
            events,
            context,
        }
    }

    /// `NDK_FN_CONNECT_EVENT_CALLBACK`: queues the new connector.
    pub(super) unsafe extern "win64" fn connect_event(
        context: PVOID,
        connector: *mut NDK_CONNECTOR,
    ) {
        // SAFETY: the listener's `Event` reference, released only when the
        // listener's close completed.
        let event = unsafe { Event::from_context(context) };
        event.fire(None, Some(connector as usize));
    }

    /// `NdkListen` on `addr`.
    pub fn listen(&self, addr: SocketAddr, timeout: Duration) -> Result<()> {
        let f = entry(listener_table(self.raw).NdkListen, "NdkListen")?;
        let mut addr = NdkAddr::new(addr);
        let len = addr.byte_len();
        let signal = Signal::new();
        let context = signal.context();
        // SAFETY: our listener; the address is read during the call; a
        // `Signal` completion context.
        let status = unsafe {
            f(
                self.raw,
                addr.as_mut_ptr(),
                len,
                Some(request_done),
                context,
            )
        };
        let (status, _) = signal.settle(status, context, timeout, "NdkListen")?;
        check("NdkListen", status)
    }

    /// Makes a thread waiting in [`Listener::next`] give up (the other
    /// side of a one-process run failed).
    pub fn cancel_waits(&self) {
        self.events.cancel();
    }

    /// Whether [`Listener::cancel_waits`] was called.
    pub fn cancelled(&self) -> bool {
        self.events.is_cancelled()
    }

    /// The next incoming connection, waiting at most `timeout`.
    pub fn next(&self, timeout: Duration) -> Result<Option<Connector>> {
        match self.events.take_object(timeout) {
            Some(raw) => Connector::from_raw(raw as *mut NDK_CONNECTOR).map(Some),
            None => Ok(None),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Connectors delivered but never taken: closing them rejects them.
        for raw in self.events.drain_objects() {
            drop(Connector::from_raw(raw as *mut NDK_CONNECTOR));
        }
        let Some(f) = listener_table(self.raw).NdkCloseListener else {
            return;
        };
        // The close may stay pending while accepted connectors live; its
        // completion releases the event context, so nothing waits here.
        // SAFETY: our listener, closed once; the context is its `Event`
        // reference, which the completion callback releases.
        let status = unsafe {
            f(
                self.raw.cast::<NDK_OBJECT_HEADER>(),
                Some(listener_closed),
                self.context,
            )
        };
        if status != ndkpi::STATUS_PENDING {
            // SAFETY: closed without a callback: no event can come now.
            unsafe { Event::release(self.context) };
        }
    }
}
