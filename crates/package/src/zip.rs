//! A zip archive writer (PKWARE APPNOTE 6.3: local headers, deflate,
//! central directory, end record; no zip64, so every entry and the
//! archive stay below 4 GiB), enough for Windows' Expand-Archive.

use std::io::{self, Write};

use flate2::Compression;
use flate2::write::DeflateEncoder;

use crate::stamp::Stamp;

/// One entry already written, for the central directory.
struct Entry {
    name: String,
    crc: u32,
    compressed: u32,
    size: u32,
    offset: u32,
}

/// Writes a zip archive of files added one by one.
pub struct ZipWriter<W: Write> {
    out: W,
    written: u32,
    entries: Vec<Entry>,
    dos_time: u16,
    dos_date: u16,
}

impl<W: Write> std::fmt::Debug for ZipWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZipWriter")
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

/// A value that must fit the 32-bit fields of a non-zip64 archive.
fn fits(n: usize) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| io::Error::other("zip entry or archive beyond 4 GiB"))
}

impl<W: Write> ZipWriter<W> {
    /// An archive whose entries carry `stamp` as their modification time.
    pub fn new(out: W, stamp: &Stamp) -> Self {
        let dos_time = ((stamp.hour << 11) | (stamp.minute << 5) | (stamp.second / 2)) as u16;
        let year = stamp.year.clamp(1980, 2107) - 1980;
        let dos_date = ((year << 9) | (stamp.month << 5) | stamp.day) as u16;
        ZipWriter {
            out,
            written: 0,
            entries: Vec::new(),
            dos_time,
            dos_date,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written = self
            .written
            .checked_add(fits(bytes.len())?)
            .ok_or_else(|| io::Error::other("zip archive beyond 4 GiB"))?;
        Ok(())
    }

    /// Adds `data` as `name` (forward slashes for directories), deflated.
    pub fn add(&mut self, name: &str, data: &[u8]) -> io::Result<()> {
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data)?;
        let compressed = encoder.finish()?;
        let entry = Entry {
            name: name.to_owned(),
            crc: crc32fast::hash(data),
            compressed: fits(compressed.len())?,
            size: fits(data.len())?,
            offset: self.written,
        };
        let mut header = Vec::with_capacity(30 + name.len());
        header.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        header.extend_from_slice(&20u16.to_le_bytes()); // version needed: 2.0
        header.extend_from_slice(&0x0800u16.to_le_bytes()); // UTF-8 names
        header.extend_from_slice(&8u16.to_le_bytes()); // deflate
        header.extend_from_slice(&self.dos_time.to_le_bytes());
        header.extend_from_slice(&self.dos_date.to_le_bytes());
        header.extend_from_slice(&entry.crc.to_le_bytes());
        header.extend_from_slice(&entry.compressed.to_le_bytes());
        header.extend_from_slice(&entry.size.to_le_bytes());
        header.extend_from_slice(&(name.len() as u16).to_le_bytes());
        header.extend_from_slice(&0u16.to_le_bytes());
        header.extend_from_slice(name.as_bytes());
        self.put(&header)?;
        self.put(&compressed)?;
        self.entries.push(entry);
        Ok(())
    }

    /// Writes the central directory and the end record; the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        let start = self.written;
        let mut directory = Vec::new();
        for e in &self.entries {
            directory.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
            directory.extend_from_slice(&20u16.to_le_bytes()); // made by
            directory.extend_from_slice(&20u16.to_le_bytes()); // needed
            directory.extend_from_slice(&0x0800u16.to_le_bytes());
            directory.extend_from_slice(&8u16.to_le_bytes());
            directory.extend_from_slice(&self.dos_time.to_le_bytes());
            directory.extend_from_slice(&self.dos_date.to_le_bytes());
            directory.extend_from_slice(&e.crc.to_le_bytes());
            directory.extend_from_slice(&e.compressed.to_le_bytes());
            directory.extend_from_slice(&e.size.to_le_bytes());
            directory.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
            directory.extend_from_slice(&[0; 8]); // extra, comment, disk, internal
            directory.extend_from_slice(&0u32.to_le_bytes()); // external attributes
            directory.extend_from_slice(&e.offset.to_le_bytes());
            directory.extend_from_slice(e.name.as_bytes());
        }
        self.put(&directory)?;
        let count = u16::try_from(self.entries.len())
            .map_err(|_| io::Error::other("more than 65535 zip entries"))?;
        let mut end = Vec::with_capacity(22);
        end.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        end.extend_from_slice(&[0; 4]); // this disk, directory's disk
        end.extend_from_slice(&count.to_le_bytes());
        end.extend_from_slice(&count.to_le_bytes());
        end.extend_from_slice(&fits(directory.len())?.to_le_bytes());
        end.extend_from_slice(&start.to_le_bytes());
        end.extend_from_slice(&0u16.to_le_bytes());
        self.put(&end)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn u16_at(b: &[u8], at: usize) -> usize {
        usize::from(u16::from_le_bytes([b[at], b[at + 1]]))
    }

    fn u32_at(b: &[u8], at: usize) -> usize {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
    }

    /// Reads the archive back through its central directory: names,
    /// sizes, CRCs and inflated contents.
    #[test]
    fn reads_back_through_the_central_directory() {
        let stamp = Stamp::from_unix_millis(1_709_251_198_123);
        let files: [(&str, Vec<u8>); 2] = [
            ("a/one.txt", b"hello hello hello hello".to_vec()),
            ("two.bin", (0..5000u32).map(|i| (i % 251) as u8).collect()),
        ];
        let mut zip = ZipWriter::new(Vec::new(), &stamp);
        for (name, data) in &files {
            zip.add(name, data).unwrap();
        }
        let b = zip.finish().unwrap();
        let end = b.len() - 22;
        assert_eq!(u32_at(&b, end), 0x0605_4b50);
        assert_eq!(u16_at(&b, end + 10), files.len());
        let mut at = u32_at(&b, end + 16);
        for (name, data) in &files {
            assert_eq!(u32_at(&b, at), 0x0201_4b50);
            let name_len = u16_at(&b, at + 28);
            assert_eq!(&b[at + 46..at + 46 + name_len], name.as_bytes());
            assert_eq!(u32_at(&b, at + 16), crc32fast::hash(data) as usize);
            let (compressed, size) = (u32_at(&b, at + 20), u32_at(&b, at + 24));
            assert_eq!(size, data.len());
            let local = u32_at(&b, at + 42);
            assert_eq!(u32_at(&b, local), 0x0403_4b50);
            let body = local + 30 + u16_at(&b, local + 26) + u16_at(&b, local + 28);
            let mut inflated = Vec::new();
            flate2::read::DeflateDecoder::new(&b[body..body + compressed])
                .read_to_end(&mut inflated)
                .unwrap();
            assert_eq!(&inflated, data);
            at += 46 + name_len;
        }
    }
}
