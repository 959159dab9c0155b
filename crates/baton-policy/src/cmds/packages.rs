//! Validators of package managers: `npm`, `npx`, `yarn`, `pip` (registries and
//! sources, lifecycle scripts, `npx` of listed packages only).

use super::*;

impl Checker<'_> {
    pub(super) fn npm(&mut self, c: &Cmd) {
        let mut sub: Option<(usize, String)> = None;
        for (i, w) in c.args.iter().enumerate() {
            let Some(l) = w.literal() else {
                if sub.is_none() {
                    self.refuse(
                        &c.part,
                        "npm with a computed subcommand",
                        "write the npm subcommand literally",
                    );
                    return;
                }
                continue;
            };
            if l == "--" {
                break;
            }
            let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
            match name {
                "--registry" | "--@registry" => {
                    self.refuse(
                        &c.part,
                        "npm --registry installs from another registry",
                        "install from the default registry; other sources need [policy] remotes",
                    );
                    return;
                }
                "-g" | "--global" => {
                    self.refuse(
                        &c.part,
                        "npm -g installs outside the project",
                        "install locally (npm install --save-dev PKG) and run it with npx",
                    );
                    return;
                }
                "--location" if l.ends_with("global") => {
                    self.refuse(
                        &c.part,
                        "npm --location=global installs outside the project",
                        "install locally and run it with npx",
                    );
                    return;
                }
                "--script-shell" | "--node-options" | "--userconfig" | "--globalconfig"
                | "--prefix" | "--call" | "-c" => {
                    self.refuse(
                        &c.part,
                        format!("npm {name} changes which programs npm runs or where it installs"),
                        "run npm with the project's settings",
                    );
                    return;
                }
                _ => {}
            }
            if sub.is_none() && !l.starts_with('-') {
                sub = Some((i, l));
            }
        }
        let Some((i, sub)) = sub else { return };
        let rest = &c.args[i + 1..];
        match sub.as_str() {
            "install" | "i" | "add" | "in" | "ins" | "inst" | "insta" | "instal" | "isnt"
            | "isnta" | "isntal" | "isntall" | "update" | "up" | "upgrade" => {
                self.install_sources(c, rest, "npm")
            }
            "exec" | "x" => self.npx(c, rest),
            "config" | "c" => {
                let action = rest.first().and_then(|w| w.literal()).unwrap_or_default();
                if !matches!(action.as_str(), "get" | "list" | "ls") {
                    self.refuse(&c.part, format!("npm config {action} changes npm's settings (they can name the shell and node options npm uses)"), "read settings with npm config get/list; put project settings in package.json");
                }
            }
            "set" | "edit" => self.refuse(
                &c.part,
                format!("npm {sub} changes npm's settings"),
                "put project settings in package.json",
            ),
            "publish" | "unpublish" | "deprecate" | "dist-tag" | "owner" | "access" | "adduser"
            | "login" | "logout" | "token" | "team" | "org" | "hook" | "profile" | "star"
            | "unstar" => self.refuse(
                &c.part,
                format!("npm {sub} acts on the registry or your account"),
                "build and test locally; publishing is for the user",
            ),
            "init" | "create" | "innit" => {
                if let Some(pkg) = rest.iter().find(|w| !w.may_start_with('-')) {
                    self.create_package(c, pkg);
                }
            }
            _ => {}
        }
    }

    pub(super) fn create_package(&mut self, c: &Cmd, pkg: &Word) {
        let Some(p) = pkg.literal() else {
            self.refuse(
                &c.part,
                "a computed package name",
                "write the package name literally",
            );
            return;
        };
        let p = strip_version(&p);
        let full = match p.split_once('/') {
            Some((scope, name)) => format!("{scope}/create-{name}"),
            None if p.starts_with('@') => format!("{p}/create"),
            None => format!("create-{p}"),
        };
        if !self.policy.npx_packages.contains(&full) && !self.policy.npx_packages.contains(&p) {
            self.refuse(
                &c.part,
                format!("{full} is not on the list of packages baton lets npm/npx download and run"),
                "use a listed initializer (create-vite, create-next-app, create-react-app …); if the project needs this one, say so in the progress notes (only a person can add it to [policy] npx_packages)",
            );
        }
    }

    /// `npx PKG …`, `npm exec PKG`, `yarn dlx PKG`, `pnpm dlx PKG`.
    pub(super) fn npx(&mut self, c: &Cmd, args: &[Word]) {
        let mut packages: Vec<String> = Vec::new();
        let mut i = 0;
        let mut command: Option<String> = None;
        let mut after = args.len();
        while i < args.len() {
            let w = &args[i];
            let Some(l) = w.literal() else {
                self.refuse(
                    &c.part,
                    "npx with a computed package or option",
                    "write the package name literally",
                );
                return;
            };
            i += 1;
            if l == "--" {
                command = args.get(i).and_then(|w| w.literal());
                if command.is_none() && i < args.len() {
                    self.refuse(&c.part, "npx with a computed command", "write it literally");
                    return;
                }
                after = (i + 1).min(args.len());
                break;
            }
            if let Some(v) = l.strip_prefix("--package=") {
                packages.push(v.to_string());
                continue;
            }
            if l == "-p" || l == "--package" {
                match args.get(i).and_then(|w| w.literal()) {
                    Some(v) => packages.push(v),
                    None => {
                        self.refuse(
                            &c.part,
                            "npx -p with a computed package",
                            "write it literally",
                        );
                        return;
                    }
                }
                i += 1;
                continue;
            }
            if l == "-c" || l.starts_with("--call") {
                self.refuse(&c.part, "npx -c runs a shell string with package binaries on PATH, which baton cannot check", "run npx PACKAGE ARGS directly");
                return;
            }
            if l.starts_with('-') {
                continue;
            }
            command = Some(l);
            after = i;
            break;
        }
        // Packages that delete what they are given are judged as `rm -rf` of it
        // (`npm exec -- rimraf /`).
        if let Some(cmd) = &command
            && matches!(
                strip_version(cmd).as_str(),
                "rimraf" | "del" | "del-cli" | "trash" | "trash-cli" | "rm"
            )
        {
            let mut rm_args = vec![Word::quoted("-rf")];
            rm_args.extend(
                args[after..]
                    .iter()
                    .filter(|w| !w.literal().is_some_and(|l| l.starts_with('-')))
                    .cloned(),
            );
            if rm_args.len() == 1 {
                rm_args.push(Word::quoted("."));
            }
            let rm = Cmd {
                name: "rm".into(),
                args: rm_args,
                cwd: c.cwd.clone(),
                part: c.part.clone(),
            };
            self.validate(&rm);
        }
        if packages.is_empty()
            && let Some(cmd) = &command
        {
            packages.push(cmd.clone());
        }
        for p in packages {
            let name = strip_version(&p);
            if !self.policy.npx_packages.contains(&name) {
                self.refuse(
                    &c.part,
                    format!("{name} is not on the list of packages baton lets npx download and run"),
                    "add it as a dev dependency (npm install -D PKG) and run it through an npm script, use a listed tool (vite, tsc, eslint, prettier, jest, vitest, playwright …), and if the project needs this one, say so in the progress notes (only a person can add it to [policy] npx_packages)",
                );
            }
        }
    }

    pub(super) fn yarn(&mut self, c: &Cmd) {
        let first = c
            .args
            .iter()
            .position(|w| !w.literal().is_some_and(|l| l.starts_with('-')));
        for w in &c.args {
            if let Some(l) = w.literal()
                && (l == "-g" || l == "--global")
            {
                self.refuse(
                    &c.part,
                    format!("{} -g installs outside the project", c.name),
                    "install locally as a dev dependency",
                );
                return;
            }
        }
        let Some(i) = first else { return };
        let Some(sub) = c.args[i].literal() else {
            self.refuse(
                &c.part,
                format!("{} with a computed subcommand", c.name),
                "write the subcommand literally",
            );
            return;
        };
        let rest = &c.args[i + 1..];
        match sub.as_str() {
            "add" | "install" | "i" | "up" | "upgrade" | "update" => {
                self.install_sources(c, rest, &c.name)
            }
            "dlx" => self.npx(c, rest),
            "exec" => {
                let start = rest
                    .iter()
                    .position(|w| !w.literal().is_some_and(|l| l.starts_with('-')))
                    .unwrap_or(rest.len());
                self.wrapped(c, &rest[start..], false);
            }
            "node" => {
                let inner = Cmd {
                    name: "node".into(),
                    args: rest.to_vec(),
                    cwd: c.cwd.clone(),
                    part: c.part.clone(),
                };
                self.node(&inner);
            }
            "global" => self.refuse(
                &c.part,
                format!("{} global installs outside the project", c.name),
                "install locally as a dev dependency",
            ),
            "config" => {
                let action = rest.first().and_then(|w| w.literal()).unwrap_or_default();
                if !matches!(action.as_str(), "get" | "list") {
                    self.refuse(
                        &c.part,
                        format!(
                            "{} config {action} changes the package manager's settings",
                            c.name
                        ),
                        "put project settings in package.json",
                    );
                }
            }
            "create" => {
                if let Some(pkg) = rest.iter().find(|w| !w.may_start_with('-')) {
                    self.create_package(c, pkg);
                }
            }
            "publish" | "npm" | "login" | "logout" => self.refuse(
                &c.part,
                format!("{} {sub} acts on the registry or your account", c.name),
                "build and test locally",
            ),
            _ => {}
        }
    }

    /// Package operands of `npm install`/`pip install` that name a source other than
    /// the default registry (a URL, `git+…`, `github:…`, `user/repo`): refused unless
    /// `[policy] remotes` allows it.
    pub(super) fn install_sources(&mut self, c: &Cmd, args: &[Word], tool: &str) {
        let mut skip_next = false;
        for w in args {
            if skip_next {
                skip_next = false;
                continue;
            }
            let Some(l) = w.literal() else { continue };
            if l.starts_with('-') {
                let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
                let source_opt = matches!(
                    name,
                    "-i" | "--index-url"
                        | "--extra-index-url"
                        | "-f"
                        | "--find-links"
                        | "--registry"
                );
                if source_opt {
                    let value = match l.split_once('=') {
                        Some((_, v)) => Some(v.to_string()),
                        None => {
                            skip_next = true;
                            None
                        }
                    };
                    let idx = args.iter().position(|x| std::ptr::eq(x, w)).map(|p| p + 1);
                    let value =
                        value.or_else(|| idx.and_then(|p| args.get(p)).and_then(|x| x.literal()));
                    if !value.as_deref().is_some_and(|v| self.remote_allowed(v)) {
                        self.refuse(
                            &c.part,
                            format!("{tool} {name} installs from another index or location"),
                            "install from the default registry; other sources need the user to list them in [policy] remotes",
                        );
                    }
                }
                if matches!(
                    name,
                    "-r" | "--requirement" | "-c" | "--constraint" | "-e" | "--editable"
                ) && !l.contains('=')
                {
                    skip_next = name != "-e" && name != "--editable";
                }
                continue;
            }
            if remote_source(&l)
                && !self.remote_allowed(strip_pkg_name(&l).trim_start_matches("git+"))
            {
                self.refuse(
                    &c.part,
                    format!("{tool} install from {l}: a URL or repository, not the package registry"),
                    "install packages by name from the default registry; other sources need the user to list them in [policy] remotes",
                );
            }
        }
    }

    pub(crate) fn pip(&mut self, c: &Cmd) {
        let sub = c
            .args
            .iter()
            .position(|w| !w.literal().is_some_and(|l| l.starts_with('-')));
        let Some(i) = sub else { return };
        match c.args[i].literal().as_deref() {
            Some("install" | "download" | "wheel") => {
                self.install_sources(c, &c.args[i + 1..], "pip")
            }
            Some(_) => {}
            None => self.refuse(
                &c.part,
                "pip with a computed subcommand",
                "write the pip subcommand literally",
            ),
        }
    }
}

/// Whether a package operand names a source other than the registry.
pub(super) fn remote_source(l: &str) -> bool {
    let spec = strip_pkg_name(l);
    if spec.contains("://")
        || spec.starts_with("git+")
        || spec.starts_with("git@")
        || ["github:", "gitlab:", "bitbucket:", "gist:", "git:"]
            .iter()
            .any(|p| spec.starts_with(p))
    {
        return true;
    }
    // npm's `user/repo` GitHub shorthand (not `@scope/pkg`, not a path).
    !spec.starts_with('@')
        && !spec.starts_with('.')
        && !spec.starts_with('/')
        && !spec.starts_with("file:")
        && !spec.starts_with('~')
        && spec.contains('/')
        && !spec.contains(".tgz")
        && !spec.ends_with(".whl")
        && !spec.ends_with(".tar.gz")
        && !spec.ends_with(".zip")
        && !spec.contains('[')
}

/// `name@URL` (npm alias or pip direct reference `name @ URL`) → the URL part.
pub(super) fn strip_pkg_name(l: &str) -> &str {
    match l.split_once('@') {
        Some((name, rest))
            if !name.is_empty()
                && (rest.trim_start().contains("://") || rest.starts_with("git+")) =>
        {
            rest.trim_start()
        }
        _ => l,
    }
}

/// `pkg@1.2.3` → `pkg`, `@scope/pkg@latest` → `@scope/pkg`.
pub(super) fn strip_version(p: &str) -> String {
    let (scope, rest) = match p.strip_prefix('@') {
        Some(r) => ("@", r),
        None => ("", p),
    };
    let name = rest.split('@').next().unwrap_or(rest);
    format!("{scope}{name}")
}
