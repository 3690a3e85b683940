/** Every area's sample requests, merged: one file per area so areas are added without touching each other. */
import { accountSamples } from "./accounts";
import { commerceSamples } from "./commerce";
import type { Samples } from "./kit";

export const SAMPLES: Samples = { ...accountSamples, ...commerceSamples };
