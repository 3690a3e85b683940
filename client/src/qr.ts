/**
 * QR codes of the air-gapped activation codes (CONTRACT section 11), as SVG text: plain string work with uqr (no DOM,
 * no canvas), so it runs in Node, Electron's main process, any page, and the service's `/activate/` page, which loads
 * nothing from another origin. The codes' alphabet is QR alphanumeric, so a code takes the compact mode.
 */
import { renderSVG } from "uqr";

/**
 * A QR code of `text` as an SVG document (error correction M, a four-module quiet zone), to show inline or as a
 * `data:image/svg+xml,` image. `pixelSize`: the side of one module in SVG units (default 4).
 */
export function qrCodeSvg(text: string, options: { pixelSize?: number } = {}): string {
  return renderSVG(text, { ecc: "M", border: 4, pixelSize: options.pixelSize ?? 4 });
}
