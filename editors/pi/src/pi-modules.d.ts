// The part of Pi's own modules this extension uses (Pi provides them at run time; they are
// not dependencies of this package).
declare module "@mariozechner/pi-ai" {
  export function StringEnum(values: readonly string[], options?: Record<string, unknown>): any
  export function complete(model: any, context: any, options?: any): Promise<any>
}
