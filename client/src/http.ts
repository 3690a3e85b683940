/**
 * One JSON round trip over `fetch`, shared by the REST transport and the REST-only calls of both transports (update
 * check, signing keys). Failures become the client's errors here, once.
 */
import { NetworkError, ProtocolError, errorFromRest, networkError } from "./errors.js";
import type { FetchFunction } from "./transport.js";

/** Sends a request and returns the parsed JSON body of a 2xx answer; any other answer throws its error. */
export async function fetchJson(fetchFn: FetchFunction, url: string, init: RequestInit): Promise<unknown> {
  let response: Response;
  try {
    response = await fetchFn(url, init);
  } catch (error) {
    throw networkError(url, error);
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    throw new NetworkError(
      `The answer from ${url} broke off: ${error instanceof Error ? error.message : String(error)}`,
      error,
    );
  }
  const isJson = /\bjson\b/i.test(response.headers.get("content-type") ?? "");
  let body: unknown;
  if (text !== "" && isJson) {
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new ProtocolError(`The answer from ${url} is not valid JSON`, { cause: error });
    }
  }
  if (!response.ok) throw errorFromRest(response.status, body, response.statusText);
  if (body === undefined) throw new ProtocolError(`The answer from ${url} (HTTP ${response.status}) has no JSON body`);
  return body;
}
