//! The PE checksum (the optional header's `CheckSum`, "PE Format": the
//! image's 16-bit one's-complement word sum with the field itself taken
//! as zero, plus the file length). Windows checks it for kernel images;
//! signing rewrites the file, so the package checks it again after
//! osslsigncode has signed.

/// Offset of `CheckSum` in the optional header (PE32 and PE32+ alike).
const CHECKSUM_IN_OPTIONAL_HEADER: usize = 64;

/// The stored checksum and the computed one, or why there is none.
pub fn checksums(image: &[u8]) -> Result<(u32, u32), &'static str> {
    let lfanew = image
        .get(0x3c..0x40)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or("too short for a DOS header")?;
    if image.get(..2) != Some(b"MZ") || image.get(lfanew..lfanew + 4) != Some(b"PE\0\0") {
        return Err("not a PE image");
    }
    let field = lfanew + 24 + CHECKSUM_IN_OPTIONAL_HEADER;
    let stored = image
        .get(field..field + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or("truncated optional header")?;
    let mut sum: u64 = 0;
    for (index, pair) in image.chunks(2).enumerate() {
        let at = index * 2;
        let word = if (field..field + 4).contains(&at) {
            0
        } else {
            u64::from(pair[0]) | pair.get(1).map_or(0, |&b| u64::from(b) << 8)
        };
        sum += word;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum = (sum & 0xffff) + (sum >> 16);
    let computed = (sum as u32).wrapping_add(image.len() as u32);
    Ok((stored, computed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal header: MZ, e_lfanew 0x40, PE signature, a zeroed
    /// optional header whose checksum is then filled in.
    fn image(len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[..2].copy_from_slice(b"MZ");
        b[0x3c] = 0x40;
        b[0x40..0x44].copy_from_slice(b"PE\0\0");
        for (i, byte) in b.iter_mut().enumerate().skip(0x200) {
            *byte = (i * 7) as u8;
        }
        b
    }

    #[test]
    fn a_filled_in_checksum_matches_and_a_changed_byte_does_not() {
        for len in [0x400, 0x401] {
            let mut b = image(len);
            let (_, computed) = checksums(&b).unwrap();
            let field = 0x40 + 24 + 64;
            b[field..field + 4].copy_from_slice(&computed.to_le_bytes());
            let (stored, again) = checksums(&b).unwrap();
            assert_eq!(stored, again, "length {len}");
            b[0x300] ^= 1;
            let (stored, changed) = checksums(&b).unwrap();
            assert_ne!(stored, changed);
        }
        assert_eq!(checksums(b"MZ"), Err("too short for a DOS header"));
        assert_eq!(checksums(&[0u8; 0x80]), Err("not a PE image"));
    }
}
