//! One look at who leads: [`Look`].

use super::{watched, who_leads, HeadRead, Leader};

/// A request of a look, as it goes to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookRequest {
    /// List the directory's children (`getChildren`), with a children
    /// watch if `watch`.
    List {
        /// Leave a children watch.
        watch: bool,
    },
    /// Whether the directory exists, with an `exists` watch (which its
    /// creation fires).
    WatchDirectory,
    /// Read the child `node` (its data and stat), with a data watch if
    /// `watch`.
    Read {
        /// The child name.
        node: String,
        /// Leave a data watch.
        watch: bool,
    },
}

/// What a request of a look answered (any error but a missing node ends
/// the look: the carrier reports it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookAnswer {
    /// The children listed.
    Listed(Vec<String>),
    /// Whether the directory exists.
    Exists(bool),
    /// The child read: its data, data version, owner session and czxid.
    Read {
        /// Its data.
        data: Vec<u8>,
        /// Its data version.
        version: i32,
        /// Its `ephemeralOwner` (0: persistent).
        ephemeral_owner: i64,
        /// Its czxid.
        czxid: i64,
    },
    /// The node listed or read does not exist (`NoNode`).
    Missing,
}

/// What comes of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Looked {
    /// Send this request next.
    Send(LookRequest),
    /// The look is over: this leader leads, or no one. A look with watches
    /// ends on a request that left one (a listing of a directory with no
    /// contender, an `exists` of a missing directory, the read of the
    /// head), and that watch says when to look again; every earlier watch
    /// of the look is not needed (dropped).
    Over(Option<Leader>),
    /// The answer does not answer the request (a carrier's error): the
    /// look ends with it.
    Mismatched,
}

/// One look at who leads an election, sans-IO: which request goes next,
/// and who leads once the look is over ([`who_leads`] decides that). The
/// library carries it for `Election::leader` (no watches) and for an
/// election's observer (with watches: the watch of the look's last request
/// says when to look again).
///
/// ```text
/// look = Look::new(watch)
/// request = look.start()
/// loop:
///     answer = send(request)          // NoNode is an answer; any other error ends the look
///     match look.answered(answer):
///         Looked::Send(next) => request = next
///         Looked::Over(leader) => who leads (with watch: wait on the last request's watch)
/// ```
#[derive(Debug, Clone)]
pub struct Look {
    watch: bool,
    /// The request answered next.
    asked: LookRequest,
    /// The children of the last listing.
    children: Vec<String>,
}

impl Look {
    /// A look; with `watch`, one that leaves a watch that says when who
    /// leads may have changed (an observer's).
    pub fn new(watch: bool) -> Look {
        Look {
            watch,
            asked: LookRequest::List { watch: false },
            children: Vec::new(),
        }
    }

    /// The first request: a plain listing (the children's watch is set
    /// only while the directory holds no contender).
    pub fn start(&mut self) -> LookRequest {
        self.ask(LookRequest::List { watch: false })
    }

    /// The answer to the last request.
    pub fn answered(&mut self, answer: LookAnswer) -> Looked {
        let next = match (&self.asked, answer) {
            // The head gone between the listing and the read, or the
            // directory made or removed meanwhile: list again.
            (LookRequest::Read { .. }, LookAnswer::Missing)
            | (LookRequest::List { watch: true }, LookAnswer::Missing)
            | (LookRequest::WatchDirectory, LookAnswer::Exists(true)) => LookRequest::List { watch: false },
            // No directory: no one leads; an observer watches for its creation.
            (LookRequest::List { watch: false }, LookAnswer::Missing) if self.watch => {
                LookRequest::WatchDirectory
            }
            (LookRequest::List { watch: false }, LookAnswer::Missing) => return Looked::Over(None),
            (LookRequest::WatchDirectory, LookAnswer::Exists(false)) => return Looked::Over(None),
            (LookRequest::List { watch }, LookAnswer::Listed(children)) => {
                let watching = *watch;
                self.children = children;
                match self.head() {
                    Some(node) => LookRequest::Read {
                        node,
                        watch: self.watch,
                    },
                    // No contender: no one leads; an observer watches the
                    // children (a candidate's create is the news), with a
                    // listing of its own.
                    None if self.watch && !watching => LookRequest::List { watch: true },
                    None => return Looked::Over(None),
                }
            }
            (
                LookRequest::Read { node, .. },
                LookAnswer::Read {
                    data,
                    version,
                    ephemeral_owner,
                    czxid,
                },
            ) => {
                let head = HeadRead {
                    node,
                    data: &data,
                    version,
                    ephemeral_owner,
                    czxid,
                };
                // A read of the head always answers: no second read.
                return Looked::Over(who_leads(&self.children, Some(head)).leader());
            }
            // An answer that does not answer the request: the carrier's
            // error, not the server's.
            _ => return Looked::Mismatched,
        };
        Looked::Send(self.ask(next))
    }

    /// The node to read in the last listing, if any: an observer reads the
    /// head of the queue whatever it is ([`watched`]: only its deletion or
    /// a write to it can change who leads), a look without watches only
    /// the node [`who_leads`] asks for (the head writer).
    fn head(&self) -> Option<String> {
        if self.watch {
            watched(&self.children).map(str::to_owned)
        } else {
            match who_leads(&self.children, None) {
                super::Leads::Read(node) => Some(node.to_owned()),
                super::Leads::NoOne | super::Leads::Leader(_) => None,
            }
        }
    }

    fn ask(&mut self, request: LookRequest) -> LookRequest {
        self.asked = request.clone();
        request
    }
}

#[cfg(test)]
mod tests;
