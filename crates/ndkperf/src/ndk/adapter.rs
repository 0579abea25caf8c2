//! The adapter: open/close through the host entry points, info, and the
//! creates of its children.

use std::ffi::CString;
use std::ptr;

use host::{RsNdkCloseAdapter, RsNdkOpenAdapter};
use ndkpi::{
    NDK_ADAPTER, NDK_ADAPTER_DISPATCH, NDK_ADAPTER_INFO, NDK_CONNECTOR, NDK_CQ, NDK_LISTENER,
    NDK_PD, STATUS_ACCESS_DENIED, STATUS_INVALID_PARAMETER, STATUS_SHARING_VIOLATION,
    STATUS_SUCCESS,
};

use super::signal::{Event, Signal, create_done};
use super::{Connector, Cq, Listener, OBJECT_TIMEOUT, Pd, check, dispatch_table, entry};
use crate::error::{Error, Result, describe_status};

dispatch_table!(table, NDK_ADAPTER, NDK_ADAPTER_DISPATCH);

/// How an adapter opened elsewhere is closed (a bottled driver's
/// `OID_NDK_CLOSE`-style release).
pub type CloseAdapter = Box<dyn FnOnce(*mut NDK_ADAPTER) + Send + Sync>;

/// An open adapter, closed on drop: librsndk's (`RsNdkOpenAdapter`), or
/// any provider's adopted with [`Adapter::from_raw`].
pub struct Adapter {
    raw: *mut NDK_ADAPTER,
    info: NDK_ADAPTER_INFO,
    config: String,
    /// What MDL page numbers add to a page's virtual number.
    pfn_offset: u64,
    /// `None`: `RsNdkCloseAdapter`.
    close: Option<CloseAdapter>,
    /// Threads of this process that appeared while the adapter opened:
    /// its engine (and any other threads of its runtime).
    threads: Vec<u32>,
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapter")
            .field("raw", &self.raw)
            .field("config", &self.config)
            .field("pfn_offset", &self.pfn_offset)
            .finish_non_exhaustive()
    }
}

// SAFETY: NDK adapter entry points may be called from any thread and
// concurrently; the pointer stays valid until `drop` closes it.
unsafe impl Send for Adapter {}
// SAFETY: as above.
unsafe impl Sync for Adapter {}

impl Adapter {
    /// Opens the adapter described by `config` (see `rsndk_host.h`).
    pub fn open(config: &str) -> Result<Self> {
        let what = || format!("cannot open adapter '{config}'");
        // A malformed string: say what is wrong rather than just
        // STATUS_INVALID_PARAMETER.
        if let Err(e) = host::parse_config(config) {
            return Err(Error::msg(e.to_string()).context(what()));
        }
        let text = CString::new(config).map_err(|_| Error::msg(what()))?;
        let mut raw = ptr::null_mut();
        let before = crate::cpu::threads();
        // SAFETY: a NUL-terminated string and a valid out-pointer.
        let status = unsafe { RsNdkOpenAdapter(text.as_ptr(), &raw mut raw) };
        let threads = crate::cpu::threads().difference(&before).copied().collect();
        if status != STATUS_SUCCESS {
            let why = match status {
                STATUS_SHARING_VIOLATION => format!(
                    "the address is in use (its UDP port 4791 is taken by another process or adapter): {}",
                    describe_status(status)
                ),
                STATUS_INVALID_PARAMETER => format!(
                    "refused (bad configuration, or the pcap file cannot be created): {}",
                    describe_status(status)
                ),
                STATUS_ACCESS_DENIED => format!(
                    "{} ({})",
                    host::udp::NO_RAW_SOCKETS,
                    describe_status(status)
                ),
                _ => format!("RsNdkOpenAdapter failed: {}", describe_status(status)),
            };
            return Err(Error::msg(why).context(what()).with_status(status));
        }
        let mut adapter = Self {
            raw,
            info: NDK_ADAPTER_INFO::default(),
            config: config.to_owned(),
            pfn_offset: 0,
            close: None,
            threads,
        };
        adapter.info = adapter.query_info()?;
        Ok(adapter)
    }

    /// Adopts an adapter some other provider opened (a bottled
    /// `rsndk.sys`'s): its kernel numbers this process's pages as the
    /// virtual page number plus `pfn_offset`; `close` releases it on
    /// drop. `name` stands in for the configuration in messages.
    ///
    /// # Safety
    /// `raw` is an open NDK adapter whose entry points may be called from
    /// any thread until `close` is called, and nobody else closes it.
    pub unsafe fn from_raw(
        raw: *mut NDK_ADAPTER,
        name: &str,
        pfn_offset: u64,
        close: CloseAdapter,
    ) -> Result<Self> {
        if raw.is_null() {
            return Err(Error::msg(format!("adapter {name}: no adapter to adopt")));
        }
        let mut adapter = Self {
            raw,
            info: NDK_ADAPTER_INFO::default(),
            config: name.to_owned(),
            pfn_offset,
            close: Some(close),
            threads: Vec::new(),
        };
        adapter.info = adapter.query_info()?;
        Ok(adapter)
    }

    /// What MDL page numbers add to a page's virtual number (0 for
    /// librsndk).
    pub fn pfn_offset(&self) -> u64 {
        self.pfn_offset
    }

    /// The configuration string it was opened with.
    pub fn config(&self) -> &str {
        &self.config
    }

    /// The threads that appeared while the adapter opened (its engine
    /// threads; none for an adapter taken over with `from_raw`).
    pub fn threads(&self) -> &[u32] {
        &self.threads
    }

    /// The raw object (for host statistics lookups).
    pub fn raw(&self) -> *mut NDK_ADAPTER {
        self.raw
    }

    /// The info read at open.
    pub fn info(&self) -> &NDK_ADAPTER_INFO {
        &self.info
    }

    /// `NdkQueryAdapterInfo`.
    pub fn query_info(&self) -> Result<NDK_ADAPTER_INFO> {
        let f = entry(table(self.raw).NdkQueryAdapterInfo, "NdkQueryAdapterInfo")?;
        let mut info = NDK_ADAPTER_INFO::default();
        let mut size = size_of::<NDK_ADAPTER_INFO>() as u32;
        // SAFETY: our open adapter, a buffer of `size` bytes and its size.
        let status = unsafe { f(self.raw, &raw mut info, &raw mut size) };
        check("NdkQueryAdapterInfo", status)?;
        Ok(info)
    }

    /// `NdkCreateCq` with a notification callback that fires an event.
    pub fn create_cq(&self, depth: u32) -> Result<Cq> {
        let f = entry(table(self.raw).NdkCreateCq, "NdkCreateCq")?;
        let (event, notify) = Event::new();
        let signal = Signal::new();
        let context = signal.context();
        let mut cq: *mut NDK_CQ = ptr::null_mut();
        // SAFETY: our adapter; the notification context is an `Event`
        // reference released only after the CQ is closed; the completion
        // context a `Signal` reference; a valid out-pointer.
        let status = unsafe {
            f(
                self.raw,
                depth,
                Some(Cq::notification),
                notify,
                ptr::null_mut(),
                Some(create_done),
                context,
                &raw mut cq,
            )
        };
        let result = signal
            .settle(status, context, OBJECT_TIMEOUT, "NdkCreateCq")
            .and_then(|(status, object)| {
                check("NdkCreateCq", status)?;
                Ok(if object == 0 {
                    cq
                } else {
                    object as *mut NDK_CQ
                })
            });
        match result {
            Ok(cq) if !cq.is_null() => Ok(Cq::from_raw(cq, event, notify)),
            Ok(_) => Err(Error::msg("NdkCreateCq returned no CQ")),
            Err(e) => {
                // SAFETY: no CQ exists, so no notification can come.
                unsafe { Event::release(notify) };
                Err(e)
            }
        }
    }

    /// `NdkCreatePd`.
    pub fn create_pd(&self) -> Result<Pd> {
        let f = entry(table(self.raw).NdkCreatePd, "NdkCreatePd")?;
        let signal = Signal::new();
        let context = signal.context();
        let mut pd: *mut NDK_PD = ptr::null_mut();
        // SAFETY: our adapter, a `Signal` context and a valid out-pointer.
        let status = unsafe { f(self.raw, Some(create_done), context, &raw mut pd) };
        let (status, object) = signal.settle(status, context, OBJECT_TIMEOUT, "NdkCreatePd")?;
        check("NdkCreatePd", status)?;
        let pd = if object == 0 {
            pd
        } else {
            object as *mut NDK_PD
        };
        Pd::from_raw(pd, self.pfn_offset)
    }

    /// `NdkCreateConnector`.
    pub fn create_connector(&self) -> Result<Connector> {
        let f = entry(table(self.raw).NdkCreateConnector, "NdkCreateConnector")?;
        let signal = Signal::new();
        let context = signal.context();
        let mut c: *mut NDK_CONNECTOR = ptr::null_mut();
        // SAFETY: our adapter, a `Signal` context and a valid out-pointer.
        let status = unsafe { f(self.raw, Some(create_done), context, &raw mut c) };
        let (status, object) =
            signal.settle(status, context, OBJECT_TIMEOUT, "NdkCreateConnector")?;
        check("NdkCreateConnector", status)?;
        let c = if object == 0 {
            c
        } else {
            object as *mut NDK_CONNECTOR
        };
        Connector::from_raw(c)
    }

    /// `NdkCreateListener` whose connect events queue new connectors.
    pub fn create_listener(&self) -> Result<Listener> {
        let f = entry(table(self.raw).NdkCreateListener, "NdkCreateListener")?;
        let (event, events) = Event::new();
        let signal = Signal::new();
        let context = signal.context();
        let mut l: *mut NDK_LISTENER = ptr::null_mut();
        // SAFETY: our adapter; the connect-event context is an `Event`
        // reference released after the listener is closed; a `Signal`
        // completion context; a valid out-pointer.
        let status = unsafe {
            f(
                self.raw,
                Some(Listener::connect_event),
                events,
                Some(create_done),
                context,
                &raw mut l,
            )
        };
        let result = signal
            .settle(status, context, OBJECT_TIMEOUT, "NdkCreateListener")
            .and_then(|(status, object)| {
                check("NdkCreateListener", status)?;
                Ok(if object == 0 {
                    l
                } else {
                    object as *mut NDK_LISTENER
                })
            });
        match result {
            Ok(l) if !l.is_null() => Ok(Listener::from_raw(l, event, events)),
            Ok(_) => Err(Error::msg("NdkCreateListener returned no listener")),
            Err(e) => {
                // SAFETY: no listener exists, so no event can come.
                unsafe { Event::release(events) };
                Err(e)
            }
        }
    }

    pub(super) fn dispatch(&self) -> &'static NDK_ADAPTER_DISPATCH {
        table(self.raw)
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        if let Some(close) = self.close.take() {
            close(self.raw);
            return;
        }
        // SAFETY: our open adapter, closed once; its children were closed
        // before (their owners drop first).
        let _ = unsafe { RsNdkCloseAdapter(self.raw) };
    }
}
