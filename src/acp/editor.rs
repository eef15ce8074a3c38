//! The editor's files over ACP: [`EditorFiles`] as `fs/read_text_file` and `fs/write_text_file`
//! requests to the client, for a session whose client advertised them.
//!
//! Owns: the two requests, their bound in time ([`EDITOR_TIMEOUT`]; a request given up is
//! withdrawn with `$/cancel_request`) and turning the client's answers into [`EditorError`]s.
//!
//! Must not touch: which paths are asked for. The tools call this only with the target the
//! check chain let through (`tools::editor`), so no rule is skipped on this path.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::peer::{Peer, PeerError};
use crate::tools::{EditorError, EditorFiles};

/// How long the editor gets to answer one file request.
pub const EDITOR_TIMEOUT: Duration = Duration::from_secs(60);

/// One session's view of the client's files.
#[derive(Debug)]
pub struct ClientFiles {
    peer: Arc<Peer>,
    /// The session's id, known once its pod is open (before any turn).
    session_id: Arc<OnceLock<String>>,
    reads: bool,
    writes: bool,
}

impl ClientFiles {
    /// `None` when the client serves neither reads nor writes. `session_id` is filled in once
    /// the session's pod is open.
    pub fn new(
        peer: Arc<Peer>,
        session_id: Arc<OnceLock<String>>,
        fs: &acp::FileSystemCapabilities,
    ) -> Option<ClientFiles> {
        (fs.read_text_file || fs.write_text_file).then(|| ClientFiles {
            peer,
            session_id,
            reads: fs.read_text_file,
            writes: fs.write_text_file,
        })
    }

    fn session(&self) -> String {
        self.session_id.get().cloned().unwrap_or_default()
    }

    async fn ask<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, EditorError> {
        let outgoing = self.peer.request(method, params).map_err(editor_error)?;
        // Dropped on timeout (or when the caller stops waiting): the request is withdrawn.
        match tokio::time::timeout(EDITOR_TIMEOUT, outgoing.answer::<R>()).await {
            Ok(answer) => answer.map_err(editor_error),
            Err(_) => Err(EditorError::Timeout(EDITOR_TIMEOUT.as_secs())),
        }
    }
}

fn editor_error(e: PeerError) -> EditorError {
    match e {
        PeerError::Answered { message, .. } => EditorError::Refused(message),
        PeerError::Malformed(why) => EditorError::Malformed(why),
        PeerError::Closed => EditorError::Closed,
    }
}

#[async_trait]
impl EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    async fn read(&self, path: &Path) -> Result<String, EditorError> {
        let request = acp::ReadTextFileRequest::new(self.session(), path);
        let answer: acp::ReadTextFileResponse = self.ask("fs/read_text_file", &request).await?;
        Ok(answer.content)
    }

    async fn write(&self, path: &Path, content: &str) -> Result<(), EditorError> {
        let request = acp::WriteTextFileRequest::new(self.session(), path, content);
        let _: acp::WriteTextFileResponse = self.ask("fs/write_text_file", &request).await?;
        Ok(())
    }
}
