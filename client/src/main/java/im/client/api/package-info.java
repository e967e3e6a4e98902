/**
 * What an application passes to an {@link im.client.ImClient} and gets back from it: the options,
 * the listener, the values and the exceptions. It uses nothing of the SDK's other packages, so both
 * the facade ({@code im.client}) and its machinery ({@code im.client.internal}) can be built on it
 * without a package cycle (docs/architecture.md, "Client SDK").
 */
package im.client.api;
