//! The build information block: its 32-byte header, and the two strings it
//! leads to (the toolchain version and the module information), inline or
//! through pointers.

use super::image::Image;
use super::{GoBuildError, MAX_STRING, SEARCH_WINDOW};

/// What the block starts with.
const MAGIC: &[u8] = b"\xff Go buildinf:";
/// The header's size, and the alignment the linker gives it.
const HEADER: usize = 32;
/// Bit of the header's flags byte: the strings follow inline.
const INLINE: u8 = 0x2;
/// Bit of the header's flags byte (pointer format): big-endian pointers.
const BIG_ENDIAN: u8 = 0x1;
/// The sentinels around the module information: 16 bytes on each side.
const SENTINEL: usize = 16;

/// The toolchain version and the module information of an image, or
/// `None` where it has no build information block.
pub(super) fn strings(image: &Image<'_>) -> Result<Option<(String, String)>, GoBuildError> {
    let Some(start) = image.data_start else {
        return Ok(None);
    };
    let window = image.read(start, SEARCH_WINDOW)?;
    let Some(at) = (0..window.len())
        .step_by(HEADER / 2)
        .find(|&i| window[i..].starts_with(MAGIC) && window.len() - i >= HEADER)
    else {
        return Ok(None);
    };
    let header = &window[at..at + HEADER];
    let (ptr_size, flags) = (header[14], header[15]);
    let address = offset_by(start, at as u64)?;
    let (version, info) = if flags & INLINE != 0 {
        let (version, next) = inline_string(image, offset_by(address, HEADER as u64)?)?;
        let (info, _) = inline_string(image, next)?;
        (version, info)
    } else {
        let pointers = Pointers::new(ptr_size, flags & BIG_ENDIAN != 0)?;
        let version = pointers.string(image, pointers.get(&header[16..]))?;
        let info = pointers.string(image, pointers.get(&header[16 + usize::from(ptr_size)..]))?;
        (version, info)
    };
    if version.is_empty() {
        return Ok(None);
    }
    Ok(Some((lossy(version), lossy(unwrap_sentinels(info)))))
}

/// A length-prefixed (unsigned varint) string at `address`, and the
/// address after it.
fn inline_string<'a>(image: &Image<'a>, address: u64) -> Result<(&'a [u8], u64), GoBuildError> {
    let head = image.read(address, 10)?;
    let (len, used) = uvarint(head)
        .ok_or_else(|| GoBuildError::Damaged(format!("no string length at {address:#x}")))?;
    if len > MAX_STRING {
        return Err(GoBuildError::Damaged(format!(
            "a string of {len} bytes at {address:#x} (at most {MAX_STRING} are read)"
        )));
    }
    let body = offset_by(address, used as u64)?;
    let bytes = image.read_exact(body, len)?;
    Ok((bytes, offset_by(body, len)?))
}

/// `address + by`, or an error where that passes the end of the address
/// space (a lying header).
fn offset_by(address: u64, by: u64) -> Result<u64, GoBuildError> {
    address.checked_add(by).ok_or_else(|| {
        GoBuildError::Damaged(format!(
            "{by} bytes past address {address:#x} lie past the end of the address space"
        ))
    })
}

/// Reads an unsigned LEB128 varint as Go's `binary.Uvarint` does: at most
/// ten bytes, no overflow past 64 bits.
fn uvarint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        if i == 9 && b > 1 {
            return None;
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((value, i + 1));
        }
    }
    None
}

/// How the older format's pointers are read.
struct Pointers {
    size: u8,
    big_endian: bool,
}

impl Pointers {
    fn new(size: u8, big_endian: bool) -> Result<Self, GoBuildError> {
        if size != 4 && size != 8 {
            return Err(GoBuildError::Damaged(format!(
                "a pointer size of {size} bytes (4 or 8 expected)"
            )));
        }
        Ok(Pointers { size, big_endian })
    }

    /// The pointer at the start of `bytes` (which the header's length
    /// guarantees holds one).
    fn get(&self, bytes: &[u8]) -> u64 {
        let n = usize::from(self.size);
        let mut word = [0u8; 8];
        if self.big_endian {
            word[8 - n..].copy_from_slice(&bytes[..n]);
            u64::from_be_bytes(word)
        } else {
            word[..n].copy_from_slice(&bytes[..n]);
            u64::from_le_bytes(word)
        }
    }

    /// The bytes of the Go string header (data pointer, length) at
    /// `address`.
    fn string<'a>(&self, image: &Image<'a>, address: u64) -> Result<&'a [u8], GoBuildError> {
        let n = u64::from(self.size);
        let header = image.read_exact(address, 2 * n)?;
        let data = self.get(header);
        let len = self.get(&header[usize::from(self.size)..]);
        if len > MAX_STRING {
            return Err(GoBuildError::Damaged(format!(
                "a string of {len} bytes at {data:#x} (at most {MAX_STRING} are read)"
            )));
        }
        image.read_exact(data, len)
    }
}

/// The module information between its sentinels; empty where they are
/// missing, as Go's own reader has it.
fn unwrap_sentinels(info: &[u8]) -> &[u8] {
    let n = info.len();
    if n > 2 * SENTINEL && info[n - SENTINEL - 1] == b'\n' {
        &info[SENTINEL..n - SENTINEL]
    } else {
        &[]
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{uvarint, Pointers};

    /// The older format's pointers, of 4 or 8 bytes, in the byte order
    /// the header's flags name (as Go's `debug/buildinfo` reads them with
    /// `binary.BigEndian` or `binary.LittleEndian`).
    #[test]
    fn pointers_are_read_in_their_size_and_byte_order() {
        let bytes = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0xff];
        let get = |size, big| Pointers::new(size, big).unwrap().get(&bytes);
        assert_eq!(get(4, true), 0x1234_5678);
        assert_eq!(get(8, true), 0x1234_5678_9abc_def0);
        assert_eq!(get(4, false), 0x7856_3412);
        assert_eq!(get(8, false), 0xf0de_bc9a_7856_3412);
        assert!(Pointers::new(2, false).is_err());
    }

    /// Go's `binary.PutUvarint` writes `u64::MAX` as nine bytes of `0xff`
    /// and a tenth of `0x01`; `binary.Uvarint` refuses a tenth byte over 1
    /// (overflow) and takes a tenth byte of 0.
    #[test]
    fn a_ten_byte_varint_is_read_to_64_bits_and_no_further() {
        let mut max = [0xffu8; 10];
        max[9] = 0x01;
        assert_eq!(uvarint(&max), Some((u64::MAX, 10)));
        let mut over = max;
        over[9] = 0x02;
        assert_eq!(uvarint(&over), None);
        let mut zero = [0x80u8; 10];
        zero[9] = 0x00;
        assert_eq!(uvarint(&zero), Some((0, 10)));
        // Eleven bytes never end a varint.
        assert_eq!(uvarint(&[0x80; 11]), None);
        assert_eq!(uvarint(&[0xac, 0x02]), Some((300, 2)));
    }
}
