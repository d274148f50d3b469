"""One API operation as a tool: its parameters and body as arguments, one HTTP request a call.

The tool puts together what the neighbouring modules do: ``arguments`` (the schema and where
each value goes), ``request`` (the request from the model's arguments), ``auth`` (the
credential), ``exchange`` (the network) and ``response`` (what the model reads). Its own work
is the policy (reads are read-only, everything else acts on the remote side) and the race
between the call and the person's cancel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tui.errors import Cancelled
from tui.security.access import ToolAccess
from tui.security.permissions import PermissionMode
from tui.tools.adapters.openapi.arguments import SpecOperation, operation_arguments
from tui.tools.adapters.openapi.auth import Credentials
from tui.tools.adapters.openapi.describe import describe_operation
from tui.tools.adapters.openapi.exchange import exchange
from tui.tools.adapters.openapi.request import HttpRequest, RequestBuilder
from tui.tools.adapters.openapi.response import response_result
from tui.tools.adapters.openapi.spec import SpecResolver
from tui.tools.result import ToolResult
from tui.tools.schema_tool import RawParams, SchemaTool
from tui.tools.truncation import TruncationRule

if TYPE_CHECKING:
    from tui.config import OpenApiSpecSettings
    from tui.security.hosts import HostPolicy
    from tui.tools.context import ToolContext

READ_METHODS = {"GET", "HEAD", "OPTIONS"}


class OpenApiOperationTool(SchemaTool[RawParams]):
    """One API operation: its parameters and body as arguments, one HTTP request per call."""

    honours_cancel = True

    def __init__(
        self,
        *,
        name: str,
        api_name: str,
        api_title: str,
        operation: SpecOperation,
        base_url: str,
        resolver: SpecResolver,
        settings: OpenApiSpecSettings,
        env: Mapping[str, str],
    ) -> None:
        """Raises RefError when the operation cannot become a tool."""
        self.api_name = api_name
        self.method = operation.method.upper()
        self.path = operation.path
        self.base_url = base_url
        self.settings = settings
        self.operation_id = operation.op.get("operationId")
        args = operation_arguments(operation, resolver, settings)
        self.bindings = args.bindings
        self.body = args.body
        self.requests = RequestBuilder(
            tool_name=name, method=self.method, base_url=base_url, path=self.path, args=args
        )
        self.credentials = Credentials(settings, env, tool_name=name, api_name=api_name)
        super().__init__(args.schema)
        # SchemaTool's attributes are per instance: each operation is its own tool.
        self.name = name  # type: ignore[misc]
        self.label = f"{api_name}: {self.method} {self.path}"  # type: ignore[misc]
        self.permission = (  # type: ignore[misc]
            PermissionMode.READ_ONLY
            if self.method in READ_METHODS
            else PermissionMode.WORKSPACE_WRITE
        )
        limit = settings.max_response_chars + 2000
        self.truncation = TruncationRule.head(limit)  # type: ignore[misc]
        self.description = describe_operation(  # type: ignore[misc]
            operation.op,
            name=name,
            api_name=api_name,
            api_title=api_title,
            method=self.method,
            path=self.path,
            has_body=self.body is not None,
            reads_only=self.method in READ_METHODS,
            schema=args.schema,
        )

    # -- policy ---------------------------------------------------------------------------

    @property
    def url_template(self) -> str:
        return self.base_url + self.path

    def access(self, params: RawParams) -> ToolAccess:
        subject = f"{self.method} {self.url_template}"
        if self.method in READ_METHODS:
            return ToolAccess(permission=PermissionMode.READ_ONLY, subject=subject)
        return ToolAccess(permission=PermissionMode.WORKSPACE_WRITE, subject=subject, acting=True)

    # -- the call -------------------------------------------------------------------------

    async def execute(self, params: RawParams, ctx: ToolContext) -> ToolResult:
        if ctx.cancel.is_set():
            raise Cancelled(f"{self.name} was cancelled before it started")
        request = self.requests.build(params.arguments())
        # Redirects are not followed, so this one check covers every host the call reaches.
        ctx.policy.check_url(request.url)
        secrets = self.credentials.authorize(request.headers)
        task = asyncio.ensure_future(self._send(request, secrets, ctx.policy.hosts))
        waiter = asyncio.ensure_future(ctx.cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        sent = "" if self.method in READ_METHODS else " (the server may already have acted)"
        raise Cancelled(f"{self.name} was cancelled while waiting for {request.url}{sent}")

    async def _send(
        self, request: HttpRequest, secrets: list[str], hosts: HostPolicy
    ) -> ToolResult:
        response = await exchange(
            request, tool_name=self.name, settings=self.settings, secrets=secrets, hosts=hosts
        )
        return await response_result(
            response,
            request,
            tool_name=self.name,
            path=self.path,
            limit=self.settings.max_response_chars,
            secrets=secrets,
        )
