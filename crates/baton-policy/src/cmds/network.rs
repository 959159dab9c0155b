//! Validators of network programs: `curl`, `wget` (this machine only) and URLs.

use super::*;

/// Long options of curl that take the next word as their value.
const CURL_VALUE_OPTS: &[&str] = &[
    "output",
    "data",
    "data-raw",
    "data-binary",
    "data-urlencode",
    "data-ascii",
    "header",
    "request",
    "user",
    "user-agent",
    "referer",
    "cookie",
    "cookie-jar",
    "form",
    "form-string",
    "upload-file",
    "max-time",
    "connect-timeout",
    "write-out",
    "retry",
    "retry-delay",
    "retry-max-time",
    "range",
    "dump-header",
    "url",
    "proxy",
    "config",
    "resolve",
    "connect-to",
    "unix-socket",
    "abstract-unix-socket",
    "cacert",
    "capath",
    "cert",
    "key",
    "cert-type",
    "key-type",
    "json",
    "limit-rate",
    "max-redirs",
    "output-dir",
    "time-cond",
    "trace",
    "trace-ascii",
    "stderr",
    "interface",
    "local-port",
    "dns-servers",
    "doh-url",
    "preproxy",
    "proxy-user",
    "keepalive-time",
    "expect100-timeout",
    "max-filesize",
    "speed-limit",
    "speed-time",
    "oauth2-bearer",
    "aws-sigv4",
    "variable",
    "url-query",
    "retry-all-errors-x",
    "ciphers",
    "tls-max",
    "create-file-mode",
    "quote",
    "request-target",
    "socks4",
    "socks4a",
    "socks5",
    "socks5-hostname",
    "proto",
    "proto-redir",
    "proto-default",
    "happy-eyeballs-timeout-ms",
    "mail-from",
    "mail-rcpt",
    "continue-at",
    "netrc-file",
    "krb",
    "pass",
    "pubkey",
    "hostpubmd5",
    "hostpubsha256",
    "engine",
    "egd-file",
    "random-file",
    "ftp-port",
    "telnet-option",
    "tftp-blksize",
    "login-options",
    "sasl-authzid",
    "service-name",
    "unix-socket-x",
];

/// Long options of wget that take the next word as their value.
const WGET_VALUE_OPTS: &[&str] = &[
    "output-document",
    "output-file",
    "append-output",
    "directory-prefix",
    "execute",
    "input-file",
    "tries",
    "timeout",
    "wait",
    "user-agent",
    "level",
    "quota",
    "accept",
    "reject",
    "base",
    "domains",
    "include-directories",
    "exclude-directories",
    "header",
    "post-data",
    "post-file",
    "body-data",
    "body-file",
    "method",
    "user",
    "password",
    "http-user",
    "http-password",
    "referer",
    "load-cookies",
    "save-cookies",
    "config",
    "use-askpass",
    "bind-address",
    "limit-rate",
    "ca-certificate",
    "certificate",
    "private-key",
    "dns-timeout",
    "connect-timeout",
    "read-timeout",
    "waitretry",
    "proxy-user",
    "proxy-password",
];

impl Checker<'_> {
    /// `curl`: the files it writes, each URL ([`Checker::url`]), and no option that
    /// sends the request elsewhere (proxies, resolving, sockets) or reads options
    /// from a file.
    pub(super) fn curl(&mut self, c: &Cmd) {
        let parsed = parse_args(&c.args, "odHXuAebcFTmwrDxKEYyzCQtU", CURL_VALUE_OPTS, false);
        let mut urls = 0;
        for a in parsed {
            match a {
                Arg::Opt { name, value } => match name.as_str() {
                    "-o" | "--output" | "-c" | "--cookie-jar" | "-D" | "--dump-header"
                    | "--trace" | "--trace-ascii" | "--stderr" | "--output-dir" => {
                        if let Some(v) = value
                            && v.literal().as_deref() != Some("-")
                        {
                            self.write_target(&v.word(), &c.cwd, &c.part, false);
                        }
                    }
                    "-O"
                    | "--remote-name"
                    | "--remote-name-all"
                    | "-J"
                    | "--remote-header-name" => {
                        self.write_target(&Word::quoted("."), &c.cwd, &c.part, true);
                    }
                    "--url" => {
                        if let Some(v) = value {
                            urls += 1;
                            self.url(c, &v.word());
                        }
                    }
                    "-x"
                    | "--proxy"
                    | "--preproxy"
                    | "--socks4"
                    | "--socks4a"
                    | "--socks5"
                    | "--socks5-hostname"
                    | "--resolve"
                    | "--connect-to"
                    | "--dns-servers"
                    | "--doh-url"
                    | "-K"
                    | "--config"
                    | "--unix-socket"
                    | "--abstract-unix-socket"
                    | "-q"
                    | "--disable"
                    | "--netrc-file"
                    | "--variable"
                    | "--engine" => {
                        self.refuse(&c.part, format!("curl {name} can send the request somewhere other than the URL (or read options from a file)"), "use curl with a plain http://localhost URL");
                    }
                    _ => {}
                },
                Arg::Pos(w) => {
                    urls += 1;
                    self.url(c, w);
                }
                Arg::Unknown(w) => self.unknown_option(c, w),
            }
        }
        let _ = urls;
    }

    /// `wget`: the files it writes (the current directory without `-O`), each URL
    /// ([`Checker::url`]), and no option that reads commands or URLs from elsewhere.
    pub(super) fn wget(&mut self, c: &Cmd) {
        let parsed = parse_args(&c.args, "OoaPeitTwUlQABDIXRY", WGET_VALUE_OPTS, false);
        let mut named_output = false;
        for a in parsed {
            match a {
                Arg::Opt { name, value } => match name.as_str() {
                    "-O" | "--output-document" | "-o" | "--output-file" | "-a"
                    | "--append-output" | "-P" | "--directory-prefix" | "--save-cookies" => {
                        named_output |= matches!(
                            name.as_str(),
                            "-O" | "--output-document" | "-P" | "--directory-prefix"
                        );
                        if let Some(v) = value
                            && v.literal().as_deref() != Some("-")
                        {
                            self.write_target(
                                &v.word(),
                                &c.cwd,
                                &c.part,
                                name == "-P" || name == "--directory-prefix",
                            );
                        }
                    }
                    "-e" | "--execute" | "-i" | "--input-file" | "--config" | "--use-askpass"
                    | "-B" | "--base" | "-Y" => {
                        self.refuse(
                            &c.part,
                            format!("wget {name} reads commands or URLs from elsewhere"),
                            "give wget a plain http://localhost URL",
                        );
                    }
                    _ => {}
                },
                Arg::Pos(w) => self.url(c, w),
                Arg::Unknown(w) => self.unknown_option(c, w),
            }
        }
        // Without -O, wget writes into the current directory.
        if !named_output {
            self.write_target(&Word::quoted("."), &c.cwd, &c.part, true);
        }
    }

    /// A URL given to `curl` or `wget`: only this machine (loopback), written out,
    /// or with the port from `$PORT` when the command does not set it.
    pub(super) fn url(&mut self, c: &Cmd, w: &Word) {
        match w.static_text() {
            Some(u) if loopback_url(&u) => {}
            // `http://127.0.0.1:${PORT:-3000}/…`: a loopback host written out,
            // with the port baton gives the command (each agent of a parallel run
            // has its own) when the command itself does not set PORT.
            None if !self.vars.contains_key("PORT") && loopback_with_port_var(&w.text) => {}
            Some(u) => self.refuse(
                &c.part,
                format!("{} may fetch only from this machine (localhost, 127.0.0.1, [::1]); {u} is elsewhere", c.name),
                "fetch http://localhost:PORT/… from the app you are running; install packages with npm, pip or cargo",
            ),
            None => self.refuse(
                &c.part,
                format!("the URL {} is computed when the command runs, so baton cannot tell where {} connects", w.text, c.name),
                "write the URL literally, e.g. http://localhost:3000/api",
            ),
        }
    }
}

/// Whether `raw` (a word as written, in double quotes or none) is a loopback URL
/// whose only expansion is the port: `$PORT`, `${PORT}` or `${PORT:-N}`, right
/// after the host and followed by the end, `/`, `?` or `#`.
pub(crate) fn loopback_with_port_var(raw: &str) -> bool {
    let u = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(raw);
    if u.contains(['\'', '`', '\\', '"']) {
        return false;
    }
    let Some((scheme, rest)) = u.split_once("://") else {
        return false;
    };
    let Some((host, after)) = rest.split_once(':') else {
        return false;
    };
    let Some(var) = after.strip_prefix('$') else {
        return false;
    };
    let tail = if let Some(t) = var.strip_prefix("{PORT}") {
        t
    } else if let Some(t) = var.strip_prefix("{PORT:-") {
        let Some((default, t)) = t.split_once('}') else {
            return false;
        };
        if default.is_empty() || default.parse::<u16>().is_err() {
            return false;
        }
        t
    } else if let Some(t) = var.strip_prefix("PORT") {
        // `$PORTX` would be another variable.
        if t.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            return false;
        }
        t
    } else {
        return false;
    };
    if !(tail.is_empty() || tail.starts_with(['/', '?', '#'])) || tail.contains('$') {
        return false;
    }
    loopback_url(&format!("{scheme}://{host}:1{tail}"))
}

/// Whether a URL points at this machine: http(s) to localhost, 127.x.y.z, [::1] or
/// 0.0.0.0, with an optional port.
pub(crate) fn loopback_url(u: &str) -> bool {
    if u.contains('\\') || u.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let rest = match u.split_once("://") {
        Some((scheme, rest)) => {
            if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
                return false;
            }
            rest
        }
        None => u,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let (host, port) = if let Some(r) = authority.strip_prefix('[') {
        match r.split_once(']') {
            Some((h, p)) => (
                format!("[{h}]"),
                p.strip_prefix(':').unwrap_or(p).to_string(),
            ),
            None => return false,
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h.to_string(), p.to_string()),
            None => (authority.to_string(), String::new()),
        }
    };
    if !port.is_empty() && port.parse::<u16>().is_err() {
        return false;
    }
    let host = host.to_ascii_lowercase();
    if matches!(host.as_str(), "localhost" | "0.0.0.0" | "[::1]") {
        return true;
    }
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4
        && parts[0] == "127"
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.chars().all(|c| c.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
                && !(p.len() > 1 && p.starts_with('0'))
        })
}
