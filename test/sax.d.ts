/** The part of sax (1.6) the appcast tests use: a strict, namespace-aware streaming parser. */
declare module "sax" {
  export interface QualifiedAttribute {
    name: string;
    value: string;
    prefix: string;
    local: string;
    uri: string;
  }
  export interface QualifiedTag {
    name: string;
    prefix: string;
    local: string;
    uri: string;
    attributes: Record<string, QualifiedAttribute>;
    isSelfClosing: boolean;
  }
  export interface SAXParser {
    onopentag: (tag: QualifiedTag) => void;
    onclosetag: (name: string) => void;
    ontext: (text: string) => void;
    oncdata: (text: string) => void;
    onerror: (error: Error) => void;
    write(chunk: string): SAXParser;
    close(): SAXParser;
  }
  export function parser(strict: boolean, options: { xmlns: true; trim?: boolean }): SAXParser;
  const sax: { parser: typeof parser };
  export default sax;
}
