//! rping's bytes: the 16-byte control message and the ping text, as
//! rdma-core `librdmacm/examples/rping.c` (v44 to today: the protocol has
//! not changed) builds them. ndkperf's `ping` and testkit's rping over a
//! raw NDK adapter both speak through these; ndkperf's `tests/ping.rs`
//! runs each against the other, and the tests here check the text against
//! bytes worked out by hand from rping.c.

/// Bytes of `struct rping_rdma_info { __be64 buf; __be32 rkey; __be32
/// size; }`, the only message either side SENDs.
pub const INFO_LEN: usize = 16;

/// One control message: where a buffer is and how to reach it. The
/// server's go-aheads are 16 zero bytes (its `send_buf` is never
/// formatted: `rping_test_server` posts `cb->sq_wr` as `memset` left it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RdmaInfo {
    /// The buffer's address as the peer names it in RDMA (rping: its
    /// virtual address; rsndk: the registered region's virtual address).
    pub buf: u64,
    /// The buffer's remote key (NDK: the MR's remote token).
    pub rkey: u32,
    /// Bytes.
    pub size: u32,
}

impl RdmaInfo {
    /// The wire form, big-endian (`rping_format_send`).
    pub fn encode(&self) -> [u8; INFO_LEN] {
        let mut b = [0u8; INFO_LEN];
        b[..8].copy_from_slice(&self.buf.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..].copy_from_slice(&self.size.to_be_bytes());
        b
    }

    /// Reads a received message of `len` bytes; `None` unless it is
    /// exactly 16 (`server_recv`/`client_recv`: "Received bogus data").
    pub fn decode(bytes: &[u8], len: usize) -> Option<Self> {
        if len != INFO_LEN {
            return None;
        }
        let b = bytes.get(..INFO_LEN)?;
        Some(Self {
            buf: u64::from_be_bytes(b[..8].try_into().ok()?),
            rkey: u32::from_be_bytes(b[8..12].try_into().ok()?),
            size: u32::from_be_bytes(b[12..].try_into().ok()?),
        })
    }
}

/// First and last character of the rotating run (`rping_test_client`:
/// `c = start ... if (c > 122) c = 65`).
const FIRST: u8 = 65;
const LAST: u8 = 122;

/// The client's ping texts, in order: `rping_test_client` writes
/// `snprintf(start_buf, size, "rdma-ping-%d: ", ping)`, then from the
/// index snprintf returned to the end the characters `start, start+1,
/// ...` wrapping from 'z' (122) to 'A' (65), then a NUL at `size - 1`;
/// `start` begins at 'A' and moves on by one per ping, wrapping the same
/// way.
#[derive(Debug, Clone)]
pub struct PingText {
    start: u8,
}

impl Default for PingText {
    fn default() -> Self {
        Self { start: FIRST }
    }
}

impl PingText {
    /// Ping 0's generator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes ping `ping`'s text into `buf` (all of it: `buf.len()` is
    /// the ping size, at least 1) and moves the start character on.
    pub fn fill(&mut self, ping: i32, buf: &mut [u8]) {
        let size = buf.len();
        let header = format!("rdma-ping-{ping}: ");
        // snprintf writes at most size-1 characters and a NUL, and
        // returns the length it wanted, where the run starts.
        let written = header.len().min(size.saturating_sub(1));
        buf[..written].copy_from_slice(&header.as_bytes()[..written]);
        if written < size {
            buf[written] = 0;
        }
        let mut c = self.start;
        for b in buf.iter_mut().skip(header.len()) {
            *b = c;
            c = if c >= LAST { FIRST } else { c + 1 };
        }
        self.start = if self.start >= LAST {
            FIRST
        } else {
            self.start + 1
        };
        if let Some(last) = buf.last_mut() {
            *last = 0;
        }
    }
}

/// The text of a ping buffer as rping prints it (`printf("%s")`): up to
/// the first NUL.
pub fn shown(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The length of the server's RDMA WRITE: `strlen(rdma_buf) + 1`, the
/// text and its NUL, within the `size` bytes it read (rping's strlen
/// would run past a buffer without a NUL; this stops at its end).
pub fn write_len(buf: &[u8]) -> usize {
    buf.iter()
        .position(|&b| b == 0)
        .map_or(buf.len(), |nul| nul + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(size: usize, pings: i32) -> Vec<Vec<u8>> {
        let mut g = PingText::new();
        (0..pings)
            .map(|p| {
                let mut b = vec![0xEE; size];
                g.fill(p, &mut b);
                b
            })
            .collect()
    }

    /// Expected bytes worked out by hand from rping.c's loop
    /// (`rping_test_client`): ping 0 of size 23 is "rdma-ping-0: " (13
    /// characters, snprintf returns 13), then i = 13..22 get 'A'..'J'
    /// (start 65), then byte 22 is overwritten by the NUL: 'A'..'I'.
    /// Ping 1 starts at 'B'; ping 57 at 65 + 57 = 122 'z', its run wraps
    /// to 'A' after it; ping 58 starts at 'A' again.
    #[test]
    fn texts_match_rpings_bytes() {
        let t = texts(23, 60);
        assert_eq!(&t[0][..], b"rdma-ping-0: ABCDEFGHI\0");
        assert_eq!(&t[1][..], b"rdma-ping-1: BCDEFGHIJ\0");
        assert_eq!(&t[10][..], b"rdma-ping-10: KLMNOPQR\0");
        assert_eq!(&t[57][..], b"rdma-ping-57: zABCDEFG\0");
        assert_eq!(&t[58][..], b"rdma-ping-58: ABCDEFGH\0");
        // 64 bytes (rping's default): 13 + 50 run characters + NUL; the
        // run goes 'A'..'r' ('A' + 49 = 114 'r').
        let t = texts(64, 1);
        let mut want = b"rdma-ping-0: ".to_vec();
        want.extend(65u8..=114);
        want.push(0);
        assert_eq!(t[0], want);
        assert_eq!(shown(&t[0]).len(), 63);
        assert_eq!(write_len(&t[0]), 64);
        // 100 bytes: the run wraps after 'z' (58 characters) to 'A'.
        let t = texts(100, 1);
        assert_eq!(t[0][13 + 57], b'z');
        assert_eq!(t[0][13 + 58], b'A');
        assert_eq!(t[0][99], 0);
    }

    /// A header longer than the buffer: snprintf truncates it (size-1
    /// characters and a NUL) and the run, starting past it, is empty.
    #[test]
    fn a_header_longer_than_the_ping_is_cut_as_snprintf_does() {
        let mut b = [0xEE; 23];
        PingText::new().fill(1_000_000_000, &mut b);
        assert_eq!(&b[..], b"rdma-ping-1000000000: \0");
    }

    #[test]
    fn info_round_trips_big_endian() {
        let i = RdmaInfo {
            buf: 0x0000_7f12_3456_7000,
            rkey: 0x1234_5678,
            size: 64,
        };
        let b = i.encode();
        assert_eq!(
            b,
            [
                0, 0, 0x7f, 0x12, 0x34, 0x56, 0x70, 0, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 64
            ]
        );
        assert_eq!(RdmaInfo::decode(&b, 16), Some(i));
        assert_eq!(RdmaInfo::decode(&b, 15), None);
        assert_eq!(RdmaInfo::decode(&b, 17), None);
    }
}
