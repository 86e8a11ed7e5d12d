/**
 * The id a push notification config registered without one gets, and the config a get or delete
 * without an id means: "default", the id v0.3 clients ask for. (Configs stored before this had
 * the task's id; an id-less get or delete still finds those.) Here rather than in push/ because
 * the request handler names it in errors too, and agent/ takes only types from push/.
 */
export const DEFAULT_CONFIG_ID = 'default';
