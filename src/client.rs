//! A Rust client for `pod serve`: the `jsonrpsee` client on a custom stdio transport
//! (newline-delimited JSON over a child process's pipes).
//!
//! jsonrpsee ships HTTP and WebSocket transports only; [`connect`] plugs two small adapters into
//! `ClientBuilder::build_with_tokio`. Requests are typed by the protocol's list of methods
//! ([`call`]`::<method::Run>`); the pod's `event` notifications arrive through [`events`]
//! (`subscribe_to_method("event")`), so subscribe before the first `run`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use pod::client::{call, connect, events};
//! use pod::protocol::{method, ApprovalCapability, ClientCapabilities, InitializeParams};
//! use pod::protocol::{InputItem, RunParams};
//!
//! let mut child = tokio::process::Command::new("pod")
//!     .args(["serve", "--manifest", "pod.toml"])
//!     .stdin(std::process::Stdio::piped())
//!     .stdout(std::process::Stdio::piped())
//!     .spawn()?;
//! let stdin = child.stdin.take().ok_or("no stdin")?;
//! let stdout = child.stdout.take().ok_or("no stdout")?;
//! let client = connect(stdin, stdout);
//! let mut events = events(&client).await?;
//! let init = call::<method::Initialize>(&client, &InitializeParams {
//!     protocol_version: 1,
//!     client_info: None,
//!     capabilities: ClientCapabilities { approval: Some(ApprovalCapability {}) },
//! }).await?;
//! let input = vec![InputItem::Text { text: "hello".into() }];
//! let run = call::<method::Run>(&client, &RunParams { input }).await?;
//! while let Some(Ok(event)) = events.next().await {
//!     println!("{event:?}");
//! #   break;
//! }
//! # let _ = (init, run);
//! # Ok(())
//! # }
//! ```

use jsonrpsee::core::client::{
    Client, ClientBuilder, ClientT, ReceivedMessage, Subscription, SubscriptionClientT,
    TransportReceiverT, TransportSenderT,
};
use jsonrpsee::core::traits::ToRpcParams;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::protocol::{Event, Method, EVENT_METHOD};

/// Why the stdio transport stopped.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("pod pipe: {0}")]
    Io(#[from] std::io::Error),
    #[error("the pod closed its stdout")]
    Closed,
}

/// Writes each message as one line to the pod's stdin.
pub struct LineSender<W> {
    stdin: W,
}

impl<W: AsyncWrite + Unpin + Send + 'static> TransportSenderT for LineSender<W> {
    type Error = TransportError;

    async fn send(&mut self, msg: String) -> Result<(), TransportError> {
        self.stdin.write_all(msg.as_bytes()).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await?;
        Ok(())
    }

    async fn close(&mut self) -> Result<(), TransportError> {
        self.stdin.shutdown().await?;
        Ok(())
    }
}

/// Reads one message per line from the pod's stdout.
pub struct LineReceiver<R> {
    stdout: BufReader<R>,
}

impl<R: AsyncRead + Unpin + Send + 'static> TransportReceiverT for LineReceiver<R> {
    type Error = TransportError;

    async fn receive(&mut self) -> Result<ReceivedMessage, TransportError> {
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).await? == 0 {
                return Err(TransportError::Closed);
            }
            if !line.trim().is_empty() {
                return Ok(ReceivedMessage::Text(line));
            }
        }
    }
}

/// A jsonrpsee client speaking NDJSON over a pod's stdin (`stdin`) and stdout (`stdout`).
/// Must be called inside a tokio runtime.
pub fn connect<W, R>(stdin: W, stdout: R) -> Client
where
    W: AsyncWrite + Unpin + Send + 'static,
    R: AsyncRead + Unpin + Send + 'static,
{
    ClientBuilder::default().build_with_tokio(
        LineSender { stdin },
        LineReceiver {
            stdout: BufReader::new(stdout),
        },
    )
}

/// The stream of the pod's `event` notifications, in the order the pod sent them.
pub async fn events(
    client: &Client,
) -> Result<Subscription<Event>, jsonrpsee::core::client::Error> {
    client.subscribe_to_method::<Event>(EVENT_METHOD).await
}

/// Calls method `M` of the protocol's list with its typed params; the result is read into its
/// type.
pub async fn call<M: Method>(
    client: &Client,
    params: &M::Params,
) -> Result<M::Result, jsonrpsee::core::client::Error> {
    client.request(M::NAME, JsonParams::new(params)?).await
}

/// Params given as any serializable value (the pod's methods take a JSON object).
pub struct JsonParams(Box<RawValue>);

impl JsonParams {
    pub fn new<T: Serialize>(value: &T) -> Result<JsonParams, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(JsonParams)
    }
}

impl ToRpcParams for JsonParams {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        Ok(Some(self.0))
    }
}
