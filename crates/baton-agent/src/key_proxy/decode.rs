//! Request bodies as the key proxy reads them: a compressed body (`gzip`,
//! `deflate`, `zstd`) is decoded, within the same size limit as a plain one, and
//! forwarded plain, so what it asks for (`background`, a chat stream's usage) is
//! checked like any other; an encoding the proxy cannot read is refused, never
//! forwarded unread.

use std::io::Read;

use hyper::body::Bytes;

/// Why a body could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Undecodable {
    /// An encoding the proxy does not read.
    Unknown(String),
    /// Decoded, it is larger than the limit.
    TooLarge,
    /// The bytes are not what the encoding says.
    Broken(String),
}

/// `body` decoded from `encoding` (a `content-encoding` value; `None` or
/// `identity`: as it is), at most `max` bytes.
pub(super) fn decoded(
    encoding: Option<&str>,
    body: Bytes,
    max: usize,
) -> Result<Bytes, Undecodable> {
    let encoding = encoding.map(|e| e.trim().to_ascii_lowercase());
    let reader: Box<dyn Read + '_> = match encoding.as_deref() {
        None | Some("" | "identity") => return Ok(body),
        Some("gzip" | "x-gzip") => Box::new(flate2::read::GzDecoder::new(&body[..])),
        Some("deflate") => Box::new(flate2::read::ZlibDecoder::new(&body[..])),
        Some("zstd") => Box::new(
            ruzstd::decoding::StreamingDecoder::new(&body[..])
                .map_err(|e| Undecodable::Broken(e.to_string()))?,
        ),
        Some(other) => return Err(Undecodable::Unknown(other.to_string())),
    };
    let mut out = Vec::new();
    reader
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Undecodable::Broken(e.to_string()))?;
    if out.len() > max {
        return Err(Undecodable::TooLarge);
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn gzip_deflate_and_zstd_are_read_and_a_bomb_is_refused() {
        let plain = br#"{"model":"m","input":"hi","background":true}"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(plain).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zl.write_all(plain).unwrap();
        let zl = zl.finish().unwrap();
        let zs = ruzstd::encoding::compress_to_vec(
            &plain[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        for (enc, body) in [("gzip", gz), ("deflate", zl), ("zstd", zs)] {
            assert_eq!(
                decoded(Some(enc), Bytes::from(body), 1 << 20).unwrap(),
                Bytes::from_static(plain),
                "{enc}"
            );
        }
        assert_eq!(
            decoded(Some("br"), Bytes::from_static(b"x"), 10),
            Err(Undecodable::Unknown("br".into()))
        );
        let zeros = vec![0u8; 1 << 20];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&zeros).unwrap();
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < 10_000);
        assert_eq!(
            decoded(Some("gzip"), Bytes::from(bomb), 1000),
            Err(Undecodable::TooLarge)
        );
        assert!(matches!(
            decoded(Some("gzip"), Bytes::from_static(b"not gzip"), 1000),
            Err(Undecodable::Broken(_))
        ));
    }
}
