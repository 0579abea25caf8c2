//! A writer of "newc" cpio archives (the initramfs format the kernel
//! unpacks).

use std::io::{self, Write};

/// Writes entries of a newc archive to `out`, then the trailer on
/// [`CpioWriter::finish`].
#[derive(Debug)]
pub struct CpioWriter<W: Write> {
    out: W,
    next_inode: u32,
    written: u64,
    /// The rdev of the entry being written (character devices only).
    device: (u32, u32),
}

/// File type bits of `st_mode`.
const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFCHR: u32 = 0o020_000;

impl<W: Write> CpioWriter<W> {
    /// A writer onto `out`.
    pub fn new(out: W) -> Self {
        Self {
            out,
            next_inode: 1,
            written: 0,
            device: (0, 0),
        }
    }

    /// A directory with permission bits `mode`.
    pub fn dir(&mut self, path: &str, mode: u32) -> io::Result<()> {
        self.entry(path, S_IFDIR | (mode & 0o7777), 2, &[])
    }

    /// A regular file with permission bits `mode` and contents `data`.
    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        self.entry(path, S_IFREG | (mode & 0o7777), 1, data)
    }

    /// A symbolic link to `target`.
    pub fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        self.entry(path, S_IFLNK | 0o777, 1, target.as_bytes())
    }

    /// A character device node `major:minor` (e.g. `/dev/console`, which the
    /// kernel opens for init before anything is mounted).
    pub fn char_device(&mut self, path: &str, mode: u32, major: u32, minor: u32) -> io::Result<()> {
        self.device = (major, minor);
        let result = self.entry(path, S_IFCHR | (mode & 0o7777), 1, &[]);
        self.device = (0, 0);
        result
    }

    /// Writes the trailer and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, 1, &[])?;
        Ok(self.out)
    }

    fn entry(&mut self, path: &str, mode: u32, links: u32, data: &[u8]) -> io::Result<()> {
        let name_len = path.len() + 1;
        let data_len = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "cpio entry over 4 GiB"))?;
        let inode = self.next_inode;
        self.next_inode += 1;
        let header = format!(
            "070701{inode:08x}{mode:08x}{uid:08x}{gid:08x}{links:08x}{mtime:08x}{data_len:08x}{major:08x}{minor:08x}{rmajor:08x}{rminor:08x}{name_len:08x}{check:08x}",
            uid = 0,
            gid = 0,
            mtime = 0,
            major = 0,
            minor = 0,
            rmajor = self.device.0,
            rminor = self.device.1,
            check = 0,
        );
        self.put(header.as_bytes())?;
        self.put(path.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Pads to the next multiple of 4 bytes, as newc requires after the
    /// name and after the data.
    fn pad(&mut self) -> io::Result<()> {
        let padding = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0; 3][..padding])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_aligned_and_end_with_the_trailer() {
        let mut writer = CpioWriter::new(Vec::new());
        writer.dir("etc", 0o755).unwrap();
        writer.file("etc/a", 0o644, b"hello").unwrap();
        writer.symlink("init", "bin/busybox").unwrap();
        let archive = writer.finish().unwrap();
        assert_eq!(archive.len() % 4, 0);
        assert!(archive.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&archive);
        assert!(text.contains("etc/a\0"));
        assert!(text.contains("hello"));
        assert!(text.contains("TRAILER!!!\0"));
        // The first entry's nlink field (after magic, ino, mode, uid, gid).
        assert_eq!(&text[38..46], "00000002", "a directory has 2 links");
    }
}
