/**
 * licensing.v1.ReportServer (CONTRACT section 4): an application's report, stored as POST /v1/report stores it
 * (licensing/report-store.ts). The credential was checked by the authentication interceptor (routes/rpc/interceptors.ts).
 */
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { ReportServer } from "../../gen/licensing/v1/report_server_pb";
import { storeReport } from "../../licensing/report-store";
import { callOf } from "./call";
import { opt } from "./wire";

export const reportServer: ServiceImpl<typeof ReportServer> = {
  async sendReport(req, context) {
    const { ctx, client } = callOf(context);
    if (req.name === "") throw new ConnectError("name is required", Code.InvalidArgument);
    const reportId = await storeReport(
      ctx,
      {
        name: req.name,
        uid: opt(req.uid),
        version: opt(req.version),
        date: req.date
          ? new Date(Number(req.date.seconds) * 1000 + Math.floor(req.date.nanos / 1e6)).toISOString()
          : undefined,
        userKey: opt(req.userKey),
        machineId: opt(req.machineId),
        clientId: opt(req.clientId),
        clientName: opt(req.clientName),
        contentType: opt(req.contentType),
        content: req.content,
        properties: req.properties.map((p) => ({ name: p.name, value: p.value })),
      },
      client,
    );
    return { reportId };
  },
};
