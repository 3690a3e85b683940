/** Every area's sample requests, merged: one file per area so areas are added without touching each other. */
import { accountSamples } from "./accounts";
import { commerceSamples } from "./commerce";
import { consoleSamples } from "./console";
import { downloadSamples } from "./downloads";
import type { Samples } from "./kit";
import { updateSamples } from "./updates";
import { licensingSamples } from "./licensing";
import { licenseSamples } from "./licenses";
import { operationSamples } from "./operations";
import { paymentSamples } from "./payments";
import { portalSamples } from "./portal";
import { releaseControlSamples } from "./release-control";
import { webhookSamples } from "./webhooks";
import { importSamples } from "./imports";

export const SAMPLES: Samples = {
  ...accountSamples,
  ...commerceSamples,
  ...operationSamples,
  ...licenseSamples,
  ...updateSamples,
  ...licensingSamples,
  ...downloadSamples,
  ...webhookSamples,
  ...consoleSamples,
  ...paymentSamples,
  ...portalSamples,
  ...releaseControlSamples,
  ...importSamples,
};
