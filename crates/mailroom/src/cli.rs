//! The command line: every command, flag and argument, as clap definitions and nothing else.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `--project` given without a value (what `setup --project` means): a NUL, which no argument
/// can hold, so it never collides with a value typed, not even an empty one.
pub const PROJECT_ALONE: &str = "\0";

#[derive(Debug, Parser)]
#[command(
    name = "mailroom",
    version,
    about = "A local-first, asynchronous mailbox for AI coding agents and the people who run them",
    after_help = "Exit codes: 0 ok, 1 storage failure, 2 usage or invalid input, 3 not found, \
                  4 refused by the rules or the message's state, 5 conflict (ambiguous name or id), 6 timeout."
)]
pub struct Cli {
    /// The home directory (default: $MAILROOM_HOME, else the platform data dir).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<std::path::PathBuf>,

    /// A mailroom on PostgreSQL, postgres://USER@HOST:PORT/DATABASE (default: $MAILROOM_URL,
    /// else url in .mailroom.toml).
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<String>,

    /// Act as HANDLE or HANDLE@PROJECT (default: $MAILROOM_AS, .mailroom.toml, git top-level).
    #[arg(long = "as", global = true, value_name = "HANDLE[@PROJECT]")]
    pub as_: Option<String>,

    /// The project (default: .mailroom.toml's, else "default"). `setup` takes it alone, for
    /// project scope.
    #[arg(long, global = true, value_name = "P", num_args = 0..=1, default_missing_value = PROJECT_ALONE)]
    pub project: Option<String>,

    /// Print machine-readable JSON on stdout.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send a message (body from --message or stdin).
    Send(SendArgs),
    /// Show pending mail, most urgent first; marks what it shows as read.
    Inbox {
        /// Show at most N messages.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Show one message (any unique id prefix); marks it read.
    Read {
        id: String,
        /// Archive it too (done), as m_AI_l's read does.
        #[arg(long)]
        archive: bool,
    },
    /// Answer a message to its sender; closes the original unless --keep-open.
    Reply(ReplyArgs),
    /// Mark messages done (archived) without replying.
    Done {
        #[arg(required_unless_present = "all", value_name = "ID")]
        ids: Vec<String>,
        /// Every pending message.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
    /// Change a message you sent: in place while unread, else a CORRECTION.
    Edit(EditArgs),
    /// Withdraw a message you sent that has not been read.
    Cancel { id: String },
    /// Un-send your broadcast: those who saw it keep it, nobody new gets it.
    Retract { id: String },
    /// Reserve repository paths for your edits (a lease; reserving again renews it).
    ///
    /// PATTERN is a repository-relative glob covering what it matches and everything below:
    /// `src/api`, `src/api/**`, `docs/*.md`. Exit 4, naming the holder, when another agent's
    /// lease conflicts.
    Reserve {
        #[arg(required = true, value_name = "PATTERN")]
        patterns: Vec<String>,
        /// How long the lease lasts: 1m to 24h (default 2h).
        #[arg(long, value_name = "DURATION")]
        ttl: Option<String>,
        /// A shared lease: it conflicts only with exclusive ones.
        #[arg(long)]
        shared: bool,
        /// Why, shown to whoever meets the lease.
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        reason: Option<String>,
    },
    /// Release your leases: one by its id, yours on these patterns, or --all (HUMAN: anyone's).
    Release {
        #[arg(required_unless_present = "all", value_name = "ID|PATTERN")]
        targets: Vec<String>,
        #[arg(long, conflicts_with = "targets")]
        all: bool,
    },
    /// The project's active file reservations.
    Reservations,
    /// Exit 0 when you may edit PATH…, 4 naming the lease when another agent's exclusive lease
    /// covers one.
    Check {
        #[arg(required_unless_present = "staged", value_name = "PATH")]
        paths: Vec<String>,
        /// Check the paths staged for the next commit (added, changed, deleted or renamed),
        /// as the pre-commit guard of `setup git-hook` does.
        #[arg(long)]
        staged: bool,
    },
    /// Append-only channels of the project: list, post, read, show, export, import.
    Channel {
        #[command(subcommand)]
        action: ChannelAction,
    },
    /// Import mail from m_AI_l, repo-mailbox or a protocol mailbox.md (idempotent).
    Import {
        #[arg(value_enum)]
        format: ImportFormat,
        /// The m_AI_l common directory, the repo-mailbox root, or the mailbox.md file.
        path: std::path::PathBuf,
        /// For mailbox-md: the channel to import into (default: the folder's name for a
        /// `mailbox.md`, else the file's stem).
        #[arg(long, value_name = "NAME")]
        channel: Option<String>,
    },
    /// Archive the whole mailbox (every pending message).
    Archive,
    /// Messages you sent, with each recipient's state.
    Outbox {
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Recently archived mail; --restore puts one back to pending.
    Recover {
        #[arg(long, value_name = "ID")]
        restore: Option<String>,
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
    },
    /// Leave a note for your own next session.
    Handover {
        #[arg(long, short = 'm', value_name = "TEXT", allow_hyphen_values = true)]
        message: Option<String>,
        #[arg(long, value_name = "S", allow_hyphen_values = true)]
        subject: Option<String>,
        #[arg(long, value_name = "H|M|L", default_value = "M")]
        priority: String,
    },
    /// List, add, activate or deactivate members of a project.
    Roster {
        #[command(subcommand)]
        action: Option<RosterAction>,
    },
    /// List, add or change projects.
    Projects {
        #[command(subcommand)]
        action: Option<ProjectsAction>,
    },
    /// Block until new mail (or a reply to ID) is pending; prints it without marking it read.
    Wait {
        /// Only mail from this sender.
        #[arg(long, value_name = "ADDR")]
        from: Option<String>,
        /// Only a reply to this message (pending replies already there count).
        #[arg(long, value_name = "ID")]
        reply_to: Option<String>,
        /// Give up after this long (30s, 5m, 1h; a bare number is seconds); exit 6.
        #[arg(long, value_name = "DUR")]
        timeout: Option<String>,
    },
    /// Follow a mailbox live, one line per message, until interrupted (marks nothing read).
    Watch {
        /// The mailbox to follow (default: yours); the operator may follow any.
        target: Option<String>,
    },
    /// Answer a harness hook: reads its JSON on stdin, prints its JSON (never fails a session).
    Hook {
        #[arg(help = crate::harness::names(" or "))]
        harness: String,
        #[arg(help = crate::harness::events_help())]
        event: String,
        /// Anything else is ignored with a warning: a hook must never fail a session.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        rest: Vec<String>,
    },
    /// Who you are: identity, where it came from, paths, member context.
    Whoami,
    /// What a handle means from here: the mailbox a send would reach.
    Resolve { name: String },
    /// Full-text search over subject and body, archive and outbox included.
    Search {
        #[arg(allow_hyphen_values = true)]
        query: String,
    },
    /// Check the home (layout, permissions, temp files, unreadable or doubled messages).
    Doctor {
        /// Repair what is safe: remove orphan temp files, fix permissions, put back interrupted edits.
        #[arg(long)]
        fix: bool,
    },
    /// Copy the whole mailroom into another one (a PostgreSQL URL or a directory); as HUMAN.
    /// Idempotent: a second run copies only what is missing or has moved on.
    Export {
        /// Where to: postgres://USER@HOST:PORT/DATABASE, or a directory (a home).
        #[arg(long, value_name = "URL|DIR")]
        to: String,
    },
    /// Print the SQL that creates a PostgreSQL role acting only as ADDRESS (strict mode);
    /// run it as the owner of mailroom's tables.
    Role {
        /// The identity the role may act as: handle@project.
        address: String,
        /// The role's name (default: mr_HANDLE_PROJECT, lower case).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
    /// The operator's access tokens, one identity each, for `mcp --listen`; as HUMAN.
    Token {
        #[command(subcommand)]
        action: Option<TokenAction>,
    },
    /// Play a short exchange between two agents and a human in a temporary home.
    Demo,
    /// Wire mailroom into a harness: its MCP server entry and hooks, in its own config files.
    Setup(SetupArgs),
    /// Serve mailroom as MCP tools over stdio, acting as your identity (see README).
    Mcp {
        /// all: every tool; lifecycle: m_AI_l's five message-lifecycle tools only.
        #[arg(long, value_enum, default_value = "all")]
        tools: ToolsArg,
        /// An operator's server: accept any sender named in a call, instead of acting as one
        /// identity.
        #[arg(long)]
        as_any: bool,
        #[command(flatten)]
        http: ListenArgs,
    },
    /// Serve the operator's console, a web page acting as HUMAN, on loopback (see README).
    Serve {
        /// The address to listen on; port 0 picks a free port.
        #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:7474")]
        listen: std::net::SocketAddr,
        /// Open the console in the default browser once it listens.
        #[arg(long)]
        open: bool,
        /// Allow an address other than loopback: anyone who reaches it and holds the printed
        /// address can read all mail and send as HUMAN, over plain HTTP.
        #[arg(long)]
        expose: bool,
    },
}

/// `mcp --listen` and how it may be reached.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Serve over MCP Streamable HTTP at http://IP:PORT/mcp (https with --tls-cert) instead of
    /// stdio; every request needs `Authorization: Bearer TOKEN` (see `token`), and acts as the
    /// token's identity.
    #[arg(long, value_name = "IP:PORT")]
    pub listen: Option<std::net::SocketAddr>,
    /// With --listen: allow an address other than loopback (with --tls-cert and --tls-key, or
    /// --insecure-http).
    #[arg(long, requires = "listen")]
    pub expose: bool,
    /// With --listen: serve HTTPS with this PEM certificate chain (the server's certificate
    /// first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_key"])]
    pub tls_cert: Option<std::path::PathBuf>,
    /// With --tls-cert: the certificate's PEM private key.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// With --listen --expose: serve a non-loopback address over plain HTTP, without TLS, where
    /// anyone on the path can read the tokens.
    #[arg(long, requires = "listen", conflicts_with = "tls_cert")]
    pub insecure_http: bool,
    /// With --listen: also answer requests whose `Host` is NAME (a DNS name or an IP address
    /// clients reach this server by, without the port); repeat for more. The bound address,
    /// `localhost` on loopback and the certificate's DNS names are always answered.
    #[arg(long, value_name = "NAME", requires = "listen")]
    pub allow_host: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SetupArgs {
    #[arg(required_unless_present = "check", help = crate::harness::names(", ") + ", or all (every harness found on this machine); or git-hook (the pre-commit guard of file reservations)")]
    pub harness: Option<String>,
    /// User scope: the harness's config in your home, for every project (default: --project,
    /// the repository's own config files, committed with it).
    #[arg(long)]
    pub user: bool,
    /// Print the diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Take out exactly what setup added.
    #[arg(long, conflicts_with = "check")]
    pub uninstall: bool,
    /// The mailroom program the configs start, by its absolute path (default: this program's
    /// own path).
    #[arg(long, value_name = "PATH")]
    pub binary: Option<std::path::PathBuf>,
    /// How the configs start mailroom: path (the default): by this program's absolute path, or
    /// --binary's; path-lookup: as plain `mailroom`, found on the harness's PATH; uvx or npx:
    /// through a package runner, `uvx --from mailroom-cli==VERSION mailroom` or `npx -y
    /// mailroom-cli@VERSION` (it fetches the package when the harness first starts it).
    #[arg(long, value_enum)]
    pub launcher: Option<LauncherArg>,
    /// Wire the harness to a mailroom MCP server over HTTP (`mcp --listen`) at URL instead of
    /// starting mailroom here: only its MCP server entry, no hooks; the token is read from an
    /// environment variable when the harness starts, never written into a file.
    #[arg(long, value_name = "URL", conflicts_with_all = ["binary", "launcher", "check"])]
    pub remote: Option<String>,
    /// With --remote: the environment variable that holds the token (default MAILROOM_TOKEN).
    #[arg(long, value_name = "VAR", requires = "remote")]
    pub token_env: Option<String>,
    /// Put setup's `mailroom` server entry in place of one setup did not write (`--uninstall`
    /// puts that one back).
    #[arg(long, conflicts_with = "check")]
    pub replace: bool,
    /// With --user and --as HUMAN: write the operator's identity into your own config files, so
    /// that every session of the harness acts as the operator.
    #[arg(long, conflicts_with = "check")]
    pub operator: bool,
    /// Report, per harness, whether mailroom is wired in, whether the program answers, and
    /// what a session would see at its start now (changes nothing).
    #[arg(long, conflicts_with_all = ["dry_run", "uninstall", "binary", "launcher"])]
    pub check: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LauncherArg {
    Path,
    PathLookup,
    Uvx,
    Npx,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ToolsArg {
    All,
    Lifecycle,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// A recipient: handle, handle@project or HUMAN (repeat for several, at most 100).
    #[arg(long, value_name = "ADDR", required_unless_present_any = ["broadcast", "channel"], conflicts_with_all = ["broadcast", "channel"])]
    pub to: Vec<String>,
    /// Send to every member of the project (its channel `all`).
    #[arg(long, conflicts_with = "channel")]
    pub broadcast: bool,
    /// Post to a channel of the project (an append-only run mailbox).
    #[arg(long, value_name = "NAME")]
    pub channel: Option<String>,
    /// With --channel: start it even though its name is one typo from an existing channel's.
    #[arg(long, requires = "channel")]
    pub new: bool,
    #[command(flatten)]
    pub content: Content,
    #[arg(long, value_name = "K", default_value = "INFO")]
    pub kind: String,
    /// A key that makes retries safe: the same key sends once.
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Args)]
pub struct Content {
    /// One line; default: the body's first line, cut at 72 characters.
    #[arg(long, short = 's', value_name = "S", allow_hyphen_values = true)]
    pub subject: Option<String>,
    #[arg(long, value_name = "H|M|L", default_value = "M")]
    pub priority: String,
    /// The body (Markdown); read from stdin when absent.
    #[arg(long, short = 'm', value_name = "TEXT", allow_hyphen_values = true)]
    pub message: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReplyArgs {
    pub id: String,
    #[command(flatten)]
    pub content: Content,
    #[arg(long, value_name = "K", default_value = "INFO")]
    pub kind: String,
    /// Leave the original pending.
    #[arg(long)]
    pub keep_open: bool,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    pub id: String,
    #[arg(long, short = 's', value_name = "S", allow_hyphen_values = true)]
    pub subject: Option<String>,
    #[arg(long, value_name = "H|M|L")]
    pub priority: Option<String>,
    #[arg(long, short = 'm', value_name = "TEXT", allow_hyphen_values = true)]
    pub message: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum RosterAction {
    /// List the members (the default).
    List,
    /// Add a member.
    Add {
        handle: String,
        #[arg(long, default_value = "", allow_hyphen_values = true)]
        role: String,
        /// Add it inactive (sends to it are refused).
        #[arg(long)]
        inactive: bool,
    },
    /// Let a member receive mail again.
    Activate { handle: String },
    /// Refuse sends to a member, keeping its mail.
    Deactivate { handle: String },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    Open,
    Roster,
}

#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// List the tokens (the default); never their secrets.
    List,
    /// Issue a token acting as ADDRESS; prints its secret this once.
    Add {
        /// The identity the token acts as: handle@project, or HUMAN (the operator's).
        address: String,
        /// A name to revoke it by, unique among tokens.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// Its life: 30d, 12h, 90m, 2w or seconds (default: until revoked).
        #[arg(long, value_name = "DUR")]
        expires: Option<String>,
    },
    /// Revoke a token by its id or name: it stops working at the next request.
    Revoke { token: String },
}

#[derive(Debug, Subcommand)]
pub enum ProjectsAction {
    /// List the projects (the default).
    List,
    /// Create a project.
    Add {
        name: String,
        #[arg(long, value_enum, default_value = "open")]
        policy: PolicyArg,
    },
    /// Change a project's policy.
    Set {
        name: String,
        #[arg(long, value_enum)]
        policy: PolicyArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum ChannelAction {
    /// The project's channels, with what you have not seen.
    List,
    /// Append an entry (body from --message or stdin).
    Post {
        name: String,
        #[command(flatten)]
        content: Content,
        /// Start the channel even though its name is one typo from an existing channel's.
        #[arg(long)]
        new: bool,
        #[arg(long, value_name = "K", default_value = "INFO")]
        kind: String,
        #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
        idempotency_key: Option<String>,
    },
    /// Entries you have not seen yet, oldest first; marks them seen.
    Read {
        name: String,
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Every entry, seen or not (changes nothing).
    Show { name: String },
    /// Print the channel in the mailbox protocol's mailbox.md format.
    Export { name: String },
    /// Append the entries of a mailbox.md file (entries already there are skipped).
    Import {
        name: String,
        file: std::path::PathBuf,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    /// An m_AI_l COMMON_PATH: projects_config.md, rosters, mailbox_*.md, outbox_*.md.
    #[value(name = "m_ai_l", alias = "m-ai-l")]
    MAiL,
    /// A repo-mailbox root (~/.claude/coord): <repo>/inbox, <repo>/archive, _broadcast/.
    RepoMailbox,
    /// A mailbox protocol mailbox.md, into a channel.
    MailboxMd,
}
